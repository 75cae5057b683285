//! `jadpo passkeys list | remove`: a user's passkeys as an operator sees them (credential id and
//! times, never a key), and their removal when a device is lost or stolen: one passkey, or every
//! one with `--all`, recorded in `jadpo_operator_actions` as `passkeys.remove` in the same
//! transaction. A removed passkey signs nobody in from then on.

use clap::Subcommand;
use jadpo_engine::passkeys::{list, remove_as_operator};
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum PasskeysCommand {
    /// List a user's passkeys, oldest first: credential id, registered, last used.
    List {
        /// The user's id, as the application knows it.
        #[arg(long)]
        user: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove one of a user's passkeys, or every one with --all (recorded).
    Remove {
        /// The user's id.
        #[arg(long)]
        user: String,
        /// The passkey's credential id (from `jadpo passkeys list`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        credential_id: Option<String>,
        /// Remove every passkey of the user.
        #[arg(long)]
        all: bool,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: PasskeysCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, Some(app.users_store())).await?;
    let p = crate::common::operator_engine(&wiring);
    match command {
        PasskeysCommand::List { user, json } => {
            let mut headed = false;
            let mut found = Vec::new();
            for k in list(&p, &user).await? {
                crate::common::header(&mut headed, json, || {
                    format!("{:<44} {:<24} LAST USED", "CREDENTIAL", "REGISTERED")
                });
                let last = k.last_used_at.map_or_else(|| "never".to_owned(), crate::common::when);
                if !json {
                    say!(
                        "{:<44} {:<24} {last}",
                        k.credential_id,
                        crate::common::when(k.registered_at)
                    );
                }
                let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339();
                found.push(json!({
                    "credential_id": k.credential_id,
                    "registered_at": at(k.registered_at),
                    "last_used_at": k.last_used_at.map(at),
                }));
            }
            crate::common::end_list(
                json,
                "passkeys",
                found,
                &format!("user {user} has no passkeys"),
            );
        }
        PasskeysCommand::Remove { user, credential_id, all: _, operator, json } => {
            let operator = crate::common::operator(operator)?;
            let id = credential_id.as_deref();
            let removed = remove_as_operator(&p, &operator, &user, id).await.map_err(|e| {
                let missing = matches!(
                    e,
                    jadpo_engine::sign_in::SignInFlowError::Passkey(
                        jadpo_core::model::passkey::PasskeyRefusal::UnknownPasskey
                    )
                );
                match (missing, id) {
                    (true, Some(id)) => {
                        anyhow::anyhow!("user {user} has no passkey {id}: nothing removed")
                    }
                    _ => anyhow::Error::from(e),
                }
            })?;
            let text = format!(
                "removed {removed} passkey(s) of user {user} (recorded as passkeys.remove by {operator})"
            );
            crate::common::answer(json, &text, &json!({"user": user, "removed": removed}));
        }
    }
    Ok(())
}
