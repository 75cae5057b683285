//! `jadpo roles grant --runtime ROLE [--operator ROLE]`: gives the functions' database role and
//! the operators' what each needs and no more, on PostgreSQL (run as the schema's owner, after
//! every `jadpo migrate apply`); `--sql` prints the statement instead. SQLite has no roles:
//! whoever can write its file can rewrite it, so the verb refuses there and says so.

use anyhow::bail;
use clap::Subcommand;
use jadpo_core::Dialect;

use crate::common;

#[derive(Debug, Subcommand)]
pub(crate) enum RolesCommand {
    /// Grant the runtime's role (and the operators') their rights on every store given a URL.
    Grant {
        /// The role the deployed functions connect as (it must exist).
        #[arg(long)]
        runtime: String,
        /// The role operators connect as (it must exist).
        #[arg(long)]
        operator: Option<String>,
        /// Print the statement instead of running it.
        #[arg(long)]
        sql: bool,
    },
}

pub(crate) async fn run(command: RolesCommand) -> anyhow::Result<()> {
    let RolesCommand::Grant { runtime, operator, sql } = command;
    let statement = jadpo_store_postgres::roles::grants(&runtime, operator.as_deref())?;
    if sql {
        say!("{statement};");
        return Ok(());
    }
    let app = common::application()?;
    let wiring = common::wiring(&app, None).await?;
    for (name, store) in wiring.stores.iter() {
        if store.dialect() != Dialect::Postgres {
            bail!(
                "store {name} is SQLite, which has no roles: whoever can write its file can \
                 rewrite it, the audit trail included (protect the file instead)"
            );
        }
    }
    for (name, store) in wiring.stores.iter() {
        for role in std::iter::once(runtime.as_str()).chain(operator.as_deref()) {
            must_exist(name, store.as_ref(), role).await?;
        }
    }
    for (name, store) in wiring.stores.iter() {
        let mut tx = store.begin().await?;
        tx.batch(&statement).await?;
        tx.commit().await?;
        let operator = operator.as_deref().map(|o| format!(", {o} (operator)")).unwrap_or_default();
        say!("granted on store {name}: {runtime} (runtime){operator}");
    }
    Ok(())
}

/// Refuses, before any grant, a role the store's database does not have, saying to create it.
async fn must_exist(name: &str, store: &dyn jadpo_core::Store, role: &str) -> anyhow::Result<()> {
    let sql = "SELECT count(*) AS n FROM pg_roles WHERE rolname = $1";
    let rows = store.query_once(sql, &[role.into()]).await?;
    let found = rows.first().map(|r| r.get_i64("n")).transpose()?.unwrap_or(0);
    if found == 0 {
        bail!(
            "store {name}: role {role:?} does not exist: create it first (for instance \
             `CREATE ROLE \"{role}\" LOGIN PASSWORD '…'` as a superuser), then run \
             `jadpo roles grant` again; nothing was granted"
        );
    }
    Ok(())
}
