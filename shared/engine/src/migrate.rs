//! Migrating a store: every pending migration of a catalog applied under the store's migration
//! lock, each in its own transaction, and where each migration stands; and, on an operator's
//! word, dropping the tables of features a store holds though its declaration no longer places
//! them there. The plan itself (what to
//! apply, what to adopt, what to refuse) is the model's (`jadpo_schema::migrate`).

use jadpo_core::Store;
use jadpo_core::ports::SchemaIntrospection;
use jadpo_core::ports::{MigrationSession, MigrationStore};
use jadpo_schema::migrate::{
    ApplyReport, MigrateError, MigrationCatalog, MigrationStatus, Unplaced, compare, plan,
};
use jadpo_schema::placement::{Feature, SQLITE_ONLY};

/// Installs the triggers the declaration puts on the application's own tables in store `name`:
/// the audit trail's and the file counts'. Idempotent; run after every [`apply`].
pub async fn install_triggers(
    store: &dyn Store,
    app: &jadpo_application::Application,
    name: &str,
) -> Result<(), jadpo_core::StoreError> {
    crate::audit::ensure_triggers(store, &app.audited_in(name)).await?;
    let new = crate::files::ensure_triggers(store, &app.file_fields_in(name)).await?;
    for field in new {
        tracing::info!(store = name, field, "file-count trigger installed; existing rows counted");
    }
    Ok(())
}

/// Applies every pending migration of `catalog`, each in its own transaction, under the store's
/// migration lock, skipping one recorded meanwhile. A second `apply` running at once waits: on
/// PostgreSQL the lock is the session's, and it then finds nothing to do; on SQLite it is each
/// migration's transaction, and the two share the work in order, each migration applied once.
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
    for step in &plan.apply {
        crate::fault!("migrate.before_step");
        if !session.apply(step).await? {
            continue;
        }
        crate::fault!("migrate.after_step");
        match step.extends {
            None => report.applied.push(step.id()),
            Some(_) => report.extended.push(step.id()),
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

/// The `jadpo_` tables `store` holds whose feature `catalog`'s placement does not give it (a
/// store migrated before placement, or a feature since moved or removed), with the functions
/// those features' migrations made. Refused for a catalog without a placement.
pub async fn unplaced(
    store: &dyn SchemaIntrospection,
    catalog: &MigrationCatalog,
) -> Result<Unplaced, MigrateError> {
    let Some(placed) = catalog.placement() else {
        return Err(MigrateError::InvalidCatalog(
            "finding unplaced tables needs the declaration's placement".into(),
        ));
    };
    // Every table in creation order; dropped in reverse, so a table goes before those it refers to.
    let order: Vec<&str> = Feature::ALL
        .iter()
        .flat_map(|f| f.tables().iter().copied())
        .chain(SQLITE_ONLY.iter().map(|(t, _)| *t))
        .collect();
    let present = store.schema_tables().await?;
    let mut out = Unplaced::default();
    for table in order.iter().rev().filter(|t| present.iter().any(|p| p == *t)) {
        let feature = Feature::of_table(table).filter(|f| !placed.contains(f));
        if let Some(feature) = feature {
            out.tables.push((*table).to_owned());
            out.features.insert(feature);
        }
    }
    out.functions_of(catalog)?;
    Ok(out)
}

/// Drops what [`unplaced`] found, in one transaction under the migration lock; refused, changing
/// nothing, while any of those tables holds a row.
pub async fn drop_unplaced(store: &dyn Store, unplaced: &Unplaced) -> Result<(), MigrateError> {
    for table in &unplaced.tables {
        if !store.schema_table_is_empty(table).await? {
            return Err(MigrateError::Refused(format!(
                "{table} holds rows: nothing was dropped. A table the declaration does not place \
                 in this store should be empty; see what it holds before you empty it by hand"
            )));
        }
    }
    let mut session = store.migration_session().await?;
    let outcome = drop_in_session(session.as_mut(), unplaced).await;
    let finished = session.finish().await;
    outcome?;
    finished?;
    Ok(())
}

async fn drop_in_session(
    session: &mut dyn MigrationSession,
    unplaced: &Unplaced,
) -> Result<(), MigrateError> {
    crate::fault!("migrate.before_drop");
    Ok(session.drop_unplaced(unplaced).await?)
}
