//! The checks [`super::ApplicationBuilder::build`] runs on a declaration: names usable where
//! they end up (environment variables, routes, SQL identifiers interpolated into generated
//! statements), nothing declared twice, and what a declaration refers to declared too.

use super::{AppError, ServiceEntity, UserEntity};
use jadpo_core::model::audit::AuditSpec;
use jadpo_core::model::file_field::FileField;
use jadpo_core::sql::is_plain_identifier as plain;

pub(super) fn check_stores(stores: &[String]) -> Result<(), AppError> {
    if stores.is_empty() {
        return Err(AppError::NoStore);
    }
    for (i, store) in stores.iter().enumerate() {
        let mut chars = store.chars();
        let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(AppError::BadStoreName(store.clone()));
        }
        if stores[..i].contains(store) {
            return Err(AppError::Duplicate { kind: "store", name: store.clone() });
        }
    }
    Ok(())
}

/// The user statements interpolate the entity's identifiers; its mail goes through a declared
/// connection.
pub(super) fn check_users(users: &UserEntity, connections: &[String]) -> Result<(), AppError> {
    if let Some(bad) = users.identifiers().into_iter().find(|n| !plain(n)) {
        return Err(AppError::BadUsers(format!(
            "{bad:?} is not a plain lower-case SQL identifier"
        )));
    }
    if let Some(c) = users.mail_connection.as_ref().filter(|c| !connections.contains(c)) {
        return Err(AppError::BadUsers(format!(
            "sign-in mail goes through connection {c:?}, which is not declared"
        )));
    }
    for (i, p) in users.oidc.iter().enumerate() {
        if !plain(&p.name) || users.oidc[..i].iter().any(|q| q.name == p.name) {
            return Err(AppError::BadUsers(format!(
                "provider name {:?} must be a unique lower-case identifier",
                p.name
            )));
        }
        if !connections.contains(&p.keys_connection) {
            return Err(AppError::BadUsers(format!(
                "provider {:?} reads its keys through connection {:?}, which is not declared",
                p.name, p.keys_connection
            )));
        }
        if !p.issuer.starts_with("https://") || p.audience.is_empty() {
            return Err(AppError::BadUsers(format!(
                "provider {:?} needs an https:// issuer and an audience",
                p.name
            )));
        }
    }
    Ok(())
}

/// The key statements interpolate the service entity's identifiers.
pub(super) fn check_services(services: &ServiceEntity) -> Result<(), AppError> {
    match services.identifiers().into_iter().find(|n| !plain(n)) {
        Some(name) => Err(AppError::BadName {
            kind: "service entity, table or id column",
            name: name.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Audit triggers are generated DDL: every identifier in them must be a plain SQL identifier.
pub(super) fn check_audit(a: &AuditSpec) -> Result<(), AppError> {
    let bad = std::iter::once(&a.entity)
        .chain(std::iter::once(&a.table))
        .chain(a.columns.iter())
        .find(|n| !plain(n));
    if let Some(name) = bad {
        return Err(AppError::BadName {
            kind: "audited entity, table or column",
            name: name.clone(),
        });
    }
    if a.columns.is_empty() || a.columns.iter().any(|c| c == "id") {
        return Err(AppError::BadName {
            kind: "audited columns (at least one, not `id`, which identifies the record)",
            name: a.columns.join(","),
        });
    }
    Ok(())
}

/// File triggers are generated DDL from the declaration, one per column.
pub(super) fn check_file_fields(fields: &[FileField]) -> Result<(), AppError> {
    for (i, f) in fields.iter().enumerate() {
        if let Some(problem) = f.problem() {
            return Err(AppError::BadFileField { field: f.name(), problem });
        }
        if fields[..i].iter().any(|g| g.table == f.table && g.column == f.column) {
            return Err(AppError::Duplicate { kind: "file field", name: f.name() });
        }
    }
    Ok(())
}

pub(super) fn check_names(kind: &'static str, names: &[String]) -> Result<(), AppError> {
    for (i, name) in names.iter().enumerate() {
        let mut chars = name.chars();
        let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.');
        if !valid {
            return Err(AppError::BadName { kind, name: name.clone() });
        }
        if names[..i].contains(name) {
            return Err(AppError::Duplicate { kind, name: name.clone() });
        }
    }
    Ok(())
}
