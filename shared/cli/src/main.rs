//! `jadpo`, the operator's command line.
//!
//! It acts on the stores whose URLs it is given: `DATABASE_URL` for the default store and
//! `DATABASE_URL_<STORE>` for the others (with only `DATABASE_URL`, on that one database).
//! Every verb prints for people by default and JSON with `--json`; failures exit non-zero with a
//! message that says what to do. The verbs: `migrate apply | status | sql | drop-unplaced`, `keys issue | list |
//! revoke | rotate`, `tokens issue | end`, `passkeys list | remove`, `deliveries list | show | retry | discard | release`,
//! `schedules list | runs | pause | resume | trigger`, `breakers list | open | close`, `flags
//! list | set | history`, `audit show | erase`, `console`, `runs list`, `sessions list`, `actions list`, `manifest`, `snapshot`, `check`, `verify`, `backup`, `restore`, `export`, `import`,
//! `sealing-key new`.

/// Prints one line on standard output, as `println!` does, but ends the command quietly when
/// the reader has closed the pipe (`out`).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

mod actions;
mod audit;
mod breakers;
mod common;
mod console;
mod deliveries;
mod files;
mod flags;
mod keys;
mod manifest;
mod migrate;
mod out;
mod passkeys;
mod roles;
mod runs;
mod schedules;
mod schema;
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
    /// A user's passkeys: list them, remove one or all (a lost device).
    #[command(subcommand)]
    Passkeys(passkeys::PasskeysCommand),
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
    /// List workflow runs (by workflow, status, owner, or parked); delete one, audited.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// List workflow Sessions, by user.
    #[command(subcommand)]
    Sessions(runs::SessionsCommand),
    /// Serve the operator console for the stores given, printing its login link.
    Console(console::ConsoleArgs),
    /// List the operator-action log: who changed what, when, under which role.
    #[command(subcommand)]
    Actions(actions::ActionsCommand),
    /// Describe the application: stores, actions, events, connections, schedules, flags,
    /// workflows, and where each system table belongs.
    Manifest(manifest::ManifestArgs),
    /// Write each store's schema snapshot, as its migrations make it, beside the migrations.
    Snapshot(schema::SchemaArgs),
    /// Check the declaration, migrations, snapshots and (given URLs) databases agree; non-zero
    /// on any error.
    Check(schema::SchemaArgs),
    /// Run the eight operational verification checks (after a migration or a restore).
    Verify(verify::VerifyArgs),
    /// Back up an SQLite store's database into one new file (consistent while it runs).
    Backup(files::BackupArgs),
    /// Restore an SQLite store from a backup, keeping the failed database whole; then verify.
    Restore(files::RestoreArgs),
    /// Export the workflow store as JSON lines (stop writes first).
    Export(transfer::ExportArgs),
    /// Import an export into a migrated store of either kind.
    Import(transfer::ImportArgs),
    /// Grant the functions' and the operators' database roles their rights (PostgreSQL).
    #[command(subcommand)]
    Roles(roles::RolesCommand),
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
        Command::Passkeys(command) => passkeys::run(command).await,
        Command::Deliveries(command) => deliveries::run(command).await,
        Command::Breakers(command) => breakers::run(command).await,
        Command::Audit(command) => audit::run(command).await,
        Command::Flags(command) => flags::run(command).await,
        Command::Schedules(command) => schedules::run(command).await,
        Command::Actions(command) => actions::run(command).await,
        Command::Console(args) => console::run(args).await,
        Command::Runs(command) => runs::runs(command).await,
        Command::Sessions(command) => runs::sessions(command).await,
        Command::Manifest(args) => manifest::run(&args),
        Command::Snapshot(args) => schema::snapshot(args).await,
        Command::Check(args) => schema::check(args).await,
        Command::Verify(args) => verify::run(args).await,
        Command::Backup(args) => files::backup(&args),
        Command::Restore(args) => files::restore(args).await,
        Command::Export(args) => transfer::export(args).await,
        Command::Import(args) => transfer::import(args).await,
        Command::Roles(command) => roles::run(command).await,
        Command::SealingKey(command) => sealing::run(command),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The reader went away (`jadpo export | head`): nothing more to say, as for any tool.
        Err(e) if out::closed_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    //! The command line itself: clap's own consistency checks, and arbitrary argument lists
    //! (property-based) — every verb and flag `jadpo` knows, mixed with arbitrary words and
    //! values — parse or are refused with clap's message; none panics.

    use clap::{CommandFactory, Parser};
    use proptest::prelude::*;

    use super::Cli;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// Every subcommand name and long flag, at any depth.
    fn vocabulary(command: &clap::Command, out: &mut Vec<String>) {
        for arg in command.get_arguments() {
            if let Some(long) = arg.get_long() {
                out.push(format!("--{long}"));
            }
        }
        for sub in command.get_subcommands() {
            out.push(sub.get_name().to_owned());
            vocabulary(sub, out);
        }
    }

    fn word(known: Vec<String>) -> impl Strategy<Value = String> {
        prop_oneof![
            3 => prop::sample::select(known),
            1 => "-{0,2}[a-z-]{0,12}",
            1 => "[0-9-]{1,12}",
            1 => ".{0,24}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2_000),
            ..ProptestConfig::default()
        })]

        #[test]
        fn arbitrary_arguments_parse_or_are_refused(
            args in {
                let mut known = Vec::new();
                vocabulary(&Cli::command(), &mut known);
                prop::collection::vec(word(known), 0..7)
            }
        ) {
            let parsed = Cli::try_parse_from(std::iter::once("jadpo".to_owned()).chain(args.clone()));
            if let Err(e) = parsed {
                prop_assert!(!e.to_string().is_empty(), "{args:?}: an empty refusal");
            }
        }
    }
}
