//! `jadpo-schema`: what a store's tables are and how they come to be, as pure data and decisions,
//! with no database in it. Below `jadpo-core` (whose migration and introspection roles speak
//! these types), used by the engine's `migrate` and `check`, the CLI and both adapters.
//!
//! ```text
//! snapshot   a store's schema as its migrations make it, kept in a file; drift between two
//!   │
//!   ▼
//! migrate    the two ledgers, catalogs, checksums, the plan; the dialect-aware SQL splitter
//!   │
//!   ▼
//! placement  the runtime's features that keep tables, and which objects belong to which
//! table      what tables, columns, keys and indexes a store has (introspection's answer)
//! dialect    which SQL dialect a store speaks
//! ```

pub mod dialect;
pub mod migrate;
pub mod placement;
pub mod snapshot;
pub mod table;

pub use dialect::Dialect;
