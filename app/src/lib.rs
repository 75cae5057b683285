//! `jadpo-app`: the application this deployment runs — a sample shop. Users replace this crate.
//!
//! It declares what the runtime serves: today its one store, `main` (configured by
//! `DATABASE_URL`, locally `./.jadpo/main.db`). Actions, subscribers, schedules and the
//! `checkout` workflow are added here as the runtime gains those capabilities.

use jadpo_core::app::{AppError, Application};

/// The sample shop's declaration.
pub fn application() -> Result<Application, AppError> {
    Application::builder("shop").store("main").build()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sample_app_declares_its_default_store() {
        let app = super::application().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(app.name(), "shop");
        assert_eq!(app.stores(), ["main".to_owned()]);
    }
}
