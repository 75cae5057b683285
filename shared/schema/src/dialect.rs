//! Which SQL dialect a store speaks: what picks a migration folder, a statement text and a
//! splitter rule.

/// Which SQL dialect a store speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL (the deployed store).
    Postgres,
    /// SQLite (the embedded local store).
    Sqlite,
}

impl Dialect {
    /// The dialect's lower-case name, as used in folder names (`migrations/postgres`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Postgres => "postgres",
            Self::Sqlite => "sqlite",
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
