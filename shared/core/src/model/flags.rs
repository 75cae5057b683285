//! Feature flags: on/off, or a percentage rollout by a stable hash of a subject.
//!
//! Flags are declared by the application with the store they live in (`ApplicationBuilder::flag`,
//! `flags_store`); their state is in `jadpo_flags`, and each change `jadpo flags set` makes is in
//! `jadpo_flag_changes` with who made it ([`FlagChange`]). Actions and subscribers read them with
//! `HandlerContext::flag`:
//! the first read of a flag in a transaction is remembered for the rest of it, so a handler sees
//! one consistent value even if an operator changes the flag meanwhile. When the flags live in the
//! handler's own store they are read inside its transaction.
//!
//! A subject's bucket is the first 8 bytes of SHA-256 over the flag's name and the subject,
//! modulo 100: stable across processes and releases, independent between flags.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// A flag's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rollout {
    /// Off for everyone.
    Off,
    /// On for everyone.
    On,
    /// On for this percentage of subjects (0–100), by a stable hash of the subject.
    Percent(u8),
}

/// Why a rollout was not understood.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not a flag state: use on, off, or a percentage from 0% to 100% (e.g. 25%)")]
pub struct BadRollout(pub String);

impl Rollout {
    /// Parses `on`, `off`, `25%` or `25`.
    pub fn parse(text: &str) -> Result<Self, BadRollout> {
        let t = text.trim();
        match t {
            "on" => return Ok(Self::On),
            "off" => return Ok(Self::Off),
            _ => {}
        }
        t.strip_suffix('%')
            .unwrap_or(t)
            .parse::<u8>()
            .ok()
            .filter(|p| *p <= 100)
            .map(Self::Percent)
            .ok_or_else(|| BadRollout(text.to_owned()))
    }

    /// The stored `(mode, percentage)`.
    pub fn stored(self) -> (&'static str, i64) {
        match self {
            Self::Off => ("off", 0),
            Self::On => ("on", 100),
            Self::Percent(p) => ("percentage", i64::from(p)),
        }
    }

    /// From the stored `(mode, percentage)`.
    pub fn from_stored(mode: &str, percentage: i64) -> Option<Self> {
        match mode {
            "off" => Some(Self::Off),
            "on" => Some(Self::On),
            "percentage" => u8::try_from(percentage).ok().filter(|p| *p <= 100).map(Self::Percent),
            _ => None,
        }
    }

    /// As operators read it: `on`, `off`, `25%`.
    pub fn describe(self) -> String {
        match self {
            Self::Off => "off".to_owned(),
            Self::On => "on".to_owned(),
            Self::Percent(p) => format!("{p}%"),
        }
    }

    /// Whether the flag is on for `subject`.
    pub fn enabled_for(self, flag: &str, subject: &str) -> bool {
        match self {
            Self::Off => false,
            Self::On => true,
            Self::Percent(p) => bucket(flag, subject) < p,
        }
    }
}

/// `subject`'s bucket (0–99) for `flag`.
pub fn bucket(flag: &str, subject: &str) -> u8 {
    let digest =
        Sha256::new().chain_update(flag).chain_update([0]).chain_update(subject).finalize();
    let mut first = [0_u8; 8];
    first.copy_from_slice(&digest[..8]);
    // reason: a value modulo 100 always fits in a u8.
    u8::try_from(u64::from_be_bytes(first) % 100).unwrap_or(0)
}

/// One recorded change of a flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagChange {
    /// Its id.
    pub id: String,
    pub flag: String,
    /// When.
    pub changed_at: DateTime<Utc>,
    /// The state before (`on`, `off`, `25%`).
    pub before: String,
    /// The state after.
    pub after: String,
    /// Who made it.
    pub operator: String,
    /// The database role in use.
    pub db_role: String,
    /// The operating-system account the change was made from (`user@host`), when recorded.
    pub os_account: Option<String>,
}

/// A stored flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFlag {
    pub name: String,
    /// Its state.
    pub rollout: Rollout,
    /// When it was last set.
    pub updated_at: DateTime<Utc>,
    /// Who set it.
    pub updated_by: String,
}

#[cfg(test)]
mod tests;
