//! `jadpo tokens issue | end`: users' API tokens. A token is shown once; only its verifier is
//! stored. `end` signs a user out everywhere. Each change is recorded in `jadpo_operator_actions`.

use chrono::Duration;
use clap::Subcommand;
use jadpo_engine::operate::tokens::TokenOps;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum TokensCommand {
    /// Issue an API token for a user and print it once; only its verifier is stored.
    Issue {
        /// The user's id, as the application knows it.
        #[arg(long)]
        user: String,
        /// Days until the token stops working.
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=365))]
        expires_in_days: u32,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// End every live session of a user: sign them out everywhere.
    End {
        /// The user's id.
        #[arg(long)]
        user: String,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: TokensCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, Some(app.users_store())).await?;
    let engine = crate::common::operator_engine(&wiring);
    let ops = TokenOps::new(&engine);
    match command {
        TokensCommand::Issue { user, expires_in_days, operator, json } => {
            let operator = crate::common::operator(operator)?;
            let until = engine.clock.now() + Duration::days(i64::from(expires_in_days));
            let token = ops.issue(&user, until, &operator).await?;
            if json {
                let expires = token.expires_at.to_rfc3339();
                let out = json!({"id": token.id, "user": token.user_id, "token": token.secret, "expires_at": expires});
                say!("{out}");
            } else {
                say!(
                    "API token for user {} (id {}), shown once — store it now:",
                    token.user_id,
                    token.id
                );
                say!("{}", token.secret);
                say!("expires {}", crate::common::when(token.expires_at));
            }
        }
        TokensCommand::End { user, operator, json } => {
            let operator = crate::common::operator(operator)?;
            let ended = ops.end_all(&user, &operator).await?;
            let text = format!("ended {ended} live session(s) of user {user}");
            crate::common::answer(json, &text, &serde_json::json!({"user": user, "ended": ended}));
        }
    }
    Ok(())
}
