//! `jadpo sealing-key new ID`: prints a fresh sealing key as `JADPO_SEALING_KEYS` reads it
//! (`ID:base64key`), to store in a secret. It touches no database: rotation is done by putting
//! the new key first in the secret and keeping the old one after it until the step records it
//! sealed have expired.

use clap::Subcommand;
use jadpo_engine::sealing::SealingKeys;

#[derive(Debug, Subcommand)]
pub(crate) enum SealingCommand {
    /// Print a new random 32-byte key named ID, as `ID:base64key`.
    New {
        /// The key's id (letters, digits, `-`, `_`), recorded beside each answer it seals.
        id: String,
    },
}

pub(crate) fn run(command: SealingCommand) -> anyhow::Result<()> {
    let SealingCommand::New { id } = command;
    say!("{}", SealingKeys::generate(&id)?);
    Ok(())
}
