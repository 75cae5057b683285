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
//! statement   Statement<P>, the statements! and sql! macros, the placeholder check
//! ```
//!
//! Behaviour is written once and SQL text once per dialect: a role's implementation here runs
//! the slots of its statement table ([`statements!`]) in order, binding each with the slot's
//! parameter struct, field by field ([`Params`]), and decodes rows by column name. An adapter
//! supplies text through [`sql!`], naming the same parameters; the names become positional
//! while the program compiles (`named`), so no binding depends on order. A dialect is a value
//! ([`SqlDialect`]), not a trait to implement: an adapter changes what a role does only by
//! filling an optional slot with a one-statement form the role prefers (PostgreSQL's
//! `idempotency_claim`, `run_start_sending`, `run_finish_answering`), and the conformance cases
//! run on both adapters hold the two forms to one behaviour. Each adapter's tests read every
//! slot of its dialect ([`SqlDialect::slots`]) and check that its text uses exactly `$1` … `$N`.

pub mod columns;
mod dialect;
mod marks;
mod named;
mod roles;
mod rows;
mod statement;
mod store;
pub mod tables;

pub use dialect::{
    AuditStatements, ExecutionLayout, FileStatements, SqlDialect, check_dialect, execution_head, ms,
};
pub use rows::applied_migration;
pub use statement::{
    Params, Slot, SlotText, Statement, check, placeholders, positional, positional_len,
};
pub use store::SqlStore;
pub use tables::{
    AuditSql, BreakerSql, DeliveryAdminSql, FileSql, FlagSql, HousekeepingSql, KeyedStateSql,
    LeaseSql, PasskeySql, PipelineSql, ScheduleSql, ServiceKeySql, SignInSql, StepSql,
    UserSessionSql, WebhookSql, WorkflowSql,
};
