//! Migrating a store: every pending migration of a catalog applied under the store's migration
//! lock, each in its own transaction, and where each migration stands. The plan itself (what to
//! apply, what to adopt, what to refuse) is the model's (`jadpo_core::model::migrate`).

use jadpo_core::model::migrate::{
    ApplyReport, MigrateError, MigrationCatalog, MigrationStatus, compare, plan,
};
use jadpo_core::ports::{MigrationSession, MigrationStore};

/// Applies every pending migration of `catalog`, each in its own transaction, under the store's
/// migration lock. A second `apply` running at once waits for the lock and then finds nothing
/// to do.
pub async fn apply(
    store: &dyn MigrationStore,
    catalog: &MigrationCatalog,
) -> Result<ApplyReport, MigrateError> {
    let mut session = store.migration_session().await?;
    let outcome = apply_in_session(session.as_mut(), catalog).await;
    let finished = session.finish().await;
    let report = outcome?;
    finished?;
    Ok(report)
}

async fn apply_in_session(
    session: &mut dyn MigrationSession,
    catalog: &MigrationCatalog,
) -> Result<ApplyReport, MigrateError> {
    let applied = session.applied().await?;
    let plan = plan(catalog, &applied)?;
    let mut report = ApplyReport::default();
    for m in plan.adopt {
        session.adopt(m).await?;
        report.adopted.push((m.ledger, m.version, m.name.clone()));
    }
    for m in plan.apply {
        if session.apply(m).await? {
            report.applied.push((m.ledger, m.version, m.name.clone()));
        }
    }
    Ok(report)
}

/// Lists every migration of `catalog` and every applied one, with where it stands.
pub async fn status(
    store: &dyn MigrationStore,
    catalog: &MigrationCatalog,
) -> Result<Vec<MigrationStatus>, MigrateError> {
    let applied = store.migrations_applied().await?;
    Ok(compare(catalog, &applied))
}
