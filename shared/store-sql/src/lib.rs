//! `jadpo-store-sql`: the store roles written once over the transaction seam, for both adapters.
//!
//! ```text
//! roles       every store role implemented once for SqlStore<C>, over any connection C
//!   │
//!   ▼
//! store       SqlStore<C>: the adapter's connection C (it opens transactions, applies
//!   │         migrations, describes tables) and the &'static SqlDialect it speaks
//!   ▼
//! dialect     SqlDialect: one adapter's tables, the execution row's layout, the audit
//!   │         statements it generates per entity
//!   ▼
//! tables      one table of statement slots per role (PipelineSql, LeaseSql, ...)
//!   │
//!   ▼
//! statement   Statement<N>, the statements! macro, the placeholder check
//! ```
//!
//! Behaviour is written once and SQL text once per dialect: a role's implementation here runs
//! the slots of its statement table ([`statements!`]) in order, binding each with an array whose
//! length the slot's type fixes ([`Statement`]), and decodes rows by column name. An adapter
//! supplies text, never behaviour: a dialect is a value ([`SqlDialect`]), not a trait to
//! implement, so no adapter can override how a role behaves. Each adapter's tests read every
//! slot of its dialect ([`SqlDialect::slots`]) and check that its text uses exactly the
//! parameters the slot declares.

mod dialect;
mod marks;
mod roles;
mod rows;
mod statement;
mod store;
mod tables;

pub use dialect::{
    AuditStatements, ExecutionLayout, FileStatements, SqlDialect, check_dialect, execution_head, ms,
};
pub use statement::{Slot, SlotText, Statement, check, placeholders};
pub use store::SqlStore;
pub use tables::{
    AuditSql, BreakerSql, DeliveryAdminSql, FileSql, FlagSql, HousekeepingSql, LeaseSql,
    PasskeySql, PipelineSql, ScheduleSql, ServiceKeySql, SignInSql, StepSql, UserSessionSql,
    WorkflowSql,
};
