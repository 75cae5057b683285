//! What an application declares to the runtime.
//!
//! Today: its name, its stores and its own migrations. The next capabilities add actions,
//! events, subscribers, connections, schedules and workflows here. Declaration errors are
//! reported when the application is built, naming what is wrong, so a bad declaration stops a
//! process at start rather than at the first request.

use crate::migrate::Migration;
use crate::sql::Dialect;

/// Why an application's declaration was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AppError {
    /// A store name is not usable (it becomes part of `DATABASE_URL_<STORE>`).
    #[error("store name {0:?} must be lower case letters, digits and '_', starting with a letter")]
    BadStoreName(String),
    /// The same store was declared twice.
    #[error("store {0:?} is declared twice")]
    DuplicateStore(String),
    /// Migrations were given for a store nobody declared.
    #[error("migrations are given for store {0:?}, which is not declared")]
    UnknownStore(String),
    /// No store at all.
    #[error("an application declares at least one store")]
    NoStore,
}

/// An application: its stores (the first is the default store) and its own migrations.
#[derive(Debug, Clone)]
pub struct Application {
    name: String,
    stores: Vec<String>,
    migrations: Vec<(String, Dialect, Migration)>,
}

impl Application {
    /// Starts a declaration.
    pub fn builder(name: &str) -> ApplicationBuilder {
        ApplicationBuilder {
            app: Application {
                name: name.to_owned(),
                stores: Vec::new(),
                migrations: Vec::new(),
            },
        }
    }

    /// The application's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Declared stores, the default store first.
    pub fn stores(&self) -> &[String] {
        &self.stores
    }

    /// The default store (configured by `DATABASE_URL`).
    pub fn default_store(&self) -> &str {
        self.stores.first().map_or("main", String::as_str)
    }

    /// The application's own workflow-ledger migrations for `store` in `dialect`, in order.
    pub fn migrations_for(&self, store: &str, dialect: Dialect) -> Vec<Migration> {
        self.migrations
            .iter()
            .filter(|(s, d, _)| s == store && *d == dialect)
            .map(|(_, _, m)| m.clone())
            .collect()
    }
}

/// Builds an [`Application`]; [`build`](ApplicationBuilder::build) checks the declaration.
#[derive(Debug)]
pub struct ApplicationBuilder {
    app: Application,
}

impl ApplicationBuilder {
    /// Declares a store; the first one declared is the default store.
    #[must_use]
    pub fn store(mut self, name: &str) -> Self {
        self.app.stores.push(name.to_owned());
        self
    }

    /// Adds the application's own migrations for `store` in `dialect`, after the built-in ones.
    #[must_use]
    pub fn migrations(mut self, store: &str, dialect: Dialect, list: Vec<Migration>) -> Self {
        self.app
            .migrations
            .extend(list.into_iter().map(|m| (store.to_owned(), dialect, m)));
        self
    }

    /// Checks the declaration.
    pub fn build(self) -> Result<Application, AppError> {
        let app = self.app;
        if app.stores.is_empty() {
            return Err(AppError::NoStore);
        }
        for (i, store) in app.stores.iter().enumerate() {
            if !valid_store_name(store) {
                return Err(AppError::BadStoreName(store.clone()));
            }
            if app.stores[..i].contains(store) {
                return Err(AppError::DuplicateStore(store.clone()));
            }
        }
        if let Some((store, _, _)) = app
            .migrations
            .iter()
            .find(|(s, _, _)| !app.stores.contains(s))
        {
            return Err(AppError::UnknownStore(store.clone()));
        }
        Ok(app)
    }
}

fn valid_store_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::Ledger;

    #[test]
    fn a_valid_declaration_builds() {
        let m = Migration::new(Ledger::Workflow, 4, "meta", "CREATE TABLE meta (k TEXT)");
        let app = Application::builder("shop")
            .store("main")
            .store("warehouse")
            .migrations("main", Dialect::Sqlite, vec![m.clone()])
            .build();
        let app = app.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(app.default_store(), "main");
        assert_eq!(app.migrations_for("main", Dialect::Sqlite), vec![m]);
        assert!(app.migrations_for("main", Dialect::Postgres).is_empty());
    }

    #[test]
    fn bad_declarations_name_what_is_wrong() {
        let err = |b: ApplicationBuilder| b.build().err();
        assert_eq!(err(Application::builder("a")), Some(AppError::NoStore));
        assert_eq!(
            err(Application::builder("a").store("Main")),
            Some(AppError::BadStoreName("Main".into()))
        );
        assert_eq!(
            err(Application::builder("a").store("main").store("main")),
            Some(AppError::DuplicateStore("main".into()))
        );
        assert_eq!(
            err(Application::builder("a").store("main").migrations(
                "other",
                Dialect::Sqlite,
                vec![]
            )),
            None,
            "an empty list names no store"
        );
        let m = Migration::new(Ledger::Workflow, 9, "x", "x");
        assert_eq!(
            err(Application::builder("a").store("main").migrations(
                "other",
                Dialect::Sqlite,
                vec![m]
            )),
            Some(AppError::UnknownStore("other".into()))
        );
    }
}
