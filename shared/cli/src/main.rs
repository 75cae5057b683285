//! `jadpo`, the operator's command line.
//!
//! It acts on the stores whose URLs it is given: `DATABASE_URL` for the default store and
//! `DATABASE_URL_<STORE>` for the others (with only `DATABASE_URL`, on that one database).
//! Every verb prints for people by default and JSON with `--json`; failures exit non-zero with a
//! message that says what to do. The verbs: `migrate apply | status | sql`, `keys issue | list |
//! revoke | rotate`, `tokens issue | end`, `deliveries list | show | retry | discard | release`,
//! `schedules list | runs | pause | resume | trigger`, `breakers list | open | close`, `flags
//! list | set | history`, `audit show | erase`, `runs list`, `sessions list`, `actions list`, `verify`, `export`, `import`,
//! `sealing-key new`.

mod actions;
mod audit;
mod breakers;
mod common;
mod deliveries;
mod flags;
mod keys;
mod migrate;
mod runs;
mod schedules;
mod sealing;
mod tokens;
mod transfer;
mod verify;

use clap::{Parser, Subcommand};

/// Operate a Jadpo deployment.
#[derive(Debug, Parser)]
#[command(name = "jadpo", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply, list or print the schema migrations.
    #[command(subcommand)]
    Migrate(migrate::MigrateCommand),
    /// Issue, list, revoke and rotate service keys for callers of the commit function.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Issue users' API tokens; sign a user out everywhere.
    #[command(subcommand)]
    Tokens(tokens::TokensCommand),
    /// Show a record's audit trail; erase a record with its audit rows.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// List circuit breakers; force one open or closed.
    #[command(subcommand)]
    Breakers(breakers::BreakersCommand),
    /// List, set and trace feature flags.
    #[command(subcommand)]
    Flags(flags::FlagsCommand),
    /// List and inspect deliveries; retry, discard or release them.
    #[command(subcommand)]
    Deliveries(deliveries::DeliveriesCommand),
    /// List, pause, resume or trigger schedules; show their runs and skipped ticks.
    #[command(subcommand)]
    Schedules(schedules::SchedulesCommand),
    /// List workflow runs, by workflow, status or owner.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// List workflow Sessions, by user.
    #[command(subcommand)]
    Sessions(runs::SessionsCommand),
    /// List the operator-action log: who changed what, when, under which role.
    #[command(subcommand)]
    Actions(actions::ActionsCommand),
    /// Run the eight operational verification checks (after a migration or a restore).
    Verify(verify::VerifyArgs),
    /// Export the workflow store as JSON lines (stop writes first).
    Export(transfer::ExportArgs),
    /// Import an export into a migrated store of either kind.
    Import(transfer::ImportArgs),
    /// Make a key for sealing step answers (JADPO_SEALING_KEYS).
    #[command(subcommand)]
    SealingKey(sealing::SealingCommand),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Migrate(command) => migrate::run(command).await,
        Command::Keys(command) => keys::run(command).await,
        Command::Tokens(command) => tokens::run(command).await,
        Command::Deliveries(command) => deliveries::run(command).await,
        Command::Breakers(command) => breakers::run(command).await,
        Command::Audit(command) => audit::run(command).await,
        Command::Flags(command) => flags::run(command).await,
        Command::Schedules(command) => schedules::run(command).await,
        Command::Actions(command) => actions::run(command).await,
        Command::Runs(command) => runs::runs(command).await,
        Command::Sessions(command) => runs::sessions(command).await,
        Command::Verify(args) => verify::run(args).await,
        Command::Export(args) => transfer::export(args).await,
        Command::Import(args) => transfer::import(args).await,
        Command::SealingKey(command) => sealing::run(command),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
