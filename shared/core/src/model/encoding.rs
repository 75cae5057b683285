//! The forms the runtime keeps long-lived values in, one numbering on every database: the
//! `encoding` column beside each such value says which form it was written in, so a later
//! release reads it by that form (and refuses, for that row only, a form it does not know).
//!
//! `NULL` is a row written before encodings were recorded: each table reads it as the one form
//! that table had then, which for every table so far is the one it writes ([`Kept::read`]). A number is never reused for another form; a new
//! form gets the next one.
//!
//! Before this numbering, passkeys wrote `1` and the audit trail `1` (PostgreSQL) or `2`
//! (SQLite) for the forms now numbered 2 and 3. Migration 18 renumbers the rows it finds, but a
//! process of the previous release still running during a deploy may write the old number after
//! it; those tables read their old numbers as the form they meant there ([`Kept::aliases`]), so
//! no such row is lost. Everything this release writes is in the one numbering.

use std::fmt;

/// One form a value may be kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    /// The number written in `encoding`.
    pub number: i16,
    /// Its short name.
    pub name: &'static str,
    /// What it is, for people.
    pub what: &'static str,
}

/// 1: a JSON document as UTF-8 text (the outbox's payload, a service's keyed state).
pub const JSON_TEXT: Form =
    Form { number: 1, name: "json_text", what: "a JSON document as UTF-8 text" };

/// 2: `webauthn_rp` 0.3's binary form (a passkey's credential and counters; a ceremony's state
/// with its 16-byte challenge zeroed).
pub const WEBAUTHN_RP_BIN: Form = Form {
    number: 2,
    name: "webauthn_rp_bin",
    what: "webauthn_rp 0.3's binary form of a credential or ceremony",
};

/// 3: an audit row's changes, a JSON object of each changed field's `before` and `after` as the
/// database's text of the value (or `null`).
pub const AUDIT_TEXT: Form = Form {
    number: 3,
    name: "audit_text",
    what: "a JSON object of each field's before and after as text",
};

/// 4: a step's answer, its JSON text sealed with AES-256-GCM (nonce first) under the key named
/// beside it.
pub const SEALED_JSON: Form = Form {
    number: 4,
    name: "sealed_json",
    what: "JSON text sealed with AES-256-GCM, nonce first, under a named key",
};

/// Every form, by number.
pub const ALL: [Form; 4] = [JSON_TEXT, WEBAUTHN_RP_BIN, AUDIT_TEXT, SEALED_JSON];

/// Which value of which table an encoding belongs to, with the form its `NULL` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// `jadpo_outbox.payload`.
    OutboxPayload,
    /// `jadpo_passkeys.credential` and `counters`, `jadpo_passkey_challenges.state`.
    Passkey,
    /// `jadpo_audit.changes`.
    AuditChanges,
    /// `jadpo_steps.sealed_answer`.
    StepAnswer,
    /// `jadpo_keyed_state.value`.
    KeyedState,
}

impl Kept {
    /// The form this release writes, and the only one it reads besides `NULL`.
    pub fn current(self) -> Form {
        match self {
            Self::OutboxPayload => JSON_TEXT,
            Self::Passkey => WEBAUTHN_RP_BIN,
            Self::AuditChanges => AUDIT_TEXT,
            Self::StepAnswer => SEALED_JSON,
            Self::KeyedState => JSON_TEXT,
        }
    }

    /// What it is, for messages.
    pub fn what(self) -> &'static str {
        match self {
            Self::OutboxPayload => "an event's payload",
            Self::Passkey => "a passkey",
            Self::AuditChanges => "an audit row's changes",
            Self::StepAnswer => "a step's sealed answer",
            Self::KeyedState => "a service's keyed state",
        }
    }

    /// The numbers the previous release wrote in this table for its current form.
    pub(crate) fn aliases(self) -> &'static [i64] {
        match self {
            Self::Passkey => &[1],
            Self::AuditChanges => &[1, 2],
            Self::OutboxPayload | Self::StepAnswer | Self::KeyedState => &[],
        }
    }

    /// The form of `encoding` as written beside such a value: `NULL` is the form the table
    /// kept before encodings were recorded (each table had one); a known number must be this
    /// value's form (or an [alias](Self::aliases) of it in this table); anything else is refused.
    pub fn read(self, encoding: Option<i64>) -> Result<Form, UnknownEncoding> {
        // Each table has kept one form only: NULL is the one it writes now.
        let current = self.current();
        let Some(number) = encoding else { return Ok(current) };
        if i64::from(current.number) == number || self.aliases().contains(&number) {
            return Ok(current);
        }
        Err(UnknownEncoding { kept: self, number })
    }
}

impl Form {
    /// The form numbered `number`, if any.
    pub(crate) fn by_number(number: i64) -> Option<Form> {
        ALL.into_iter().find(|f| i64::from(f.number) == number)
    }
}

/// A value written in a form this release does not read as that value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnknownEncoding {
    pub kept: Kept,
    pub number: i64,
}

impl fmt::Display for UnknownEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named =
            Form::by_number(self.number).map_or(String::new(), |form| format!(" ({})", form.name));
        let current = self.kept.current();
        write!(
            f,
            "{} is kept in encoding {}{named}, which this build does not read as one (it reads \
             {} {} and NULL): a newer build wrote it; run that build",
            self.kept.what(),
            self.number,
            current.number,
            current.name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_unique_and_each_value_reads_null_and_its_own_form() {
        let mut numbers: Vec<i16> = ALL.iter().map(|f| f.number).collect();
        numbers.dedup();
        assert_eq!(numbers, [1, 2, 3, 4], "one number per form, never reused");
        for kept in [Kept::OutboxPayload, Kept::Passkey, Kept::AuditChanges, Kept::StepAnswer] {
            assert_eq!(kept.read(None), Ok(kept.current()), "{kept:?}: NULL is the legacy form");
            let own = i64::from(kept.current().number);
            assert_eq!(kept.read(Some(own)), Ok(kept.current()));
        }
    }

    #[test]
    fn another_values_form_or_an_unknown_number_is_refused_by_name() {
        let err =
            Kept::OutboxPayload.read(Some(2)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            err.contains("an event's payload is kept in encoding 2 (webauthn_rp_bin)"),
            "{err}"
        );
        assert!(err.contains("it reads 1 json_text and NULL"), "{err}");
        let err = Kept::StepAnswer.read(Some(99)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("encoding 99, which this build does not read"), "{err}");
    }

    #[test]
    fn a_tables_numbers_from_before_the_numbering_read_as_the_form_they_meant_there() {
        assert_eq!(Kept::Passkey.read(Some(1)), Ok(WEBAUTHN_RP_BIN));
        assert_eq!(Kept::AuditChanges.read(Some(1)), Ok(AUDIT_TEXT), "PostgreSQL's old number");
        assert_eq!(Kept::AuditChanges.read(Some(2)), Ok(AUDIT_TEXT), "SQLite's old number");
        assert!(Kept::AuditChanges.read(Some(4)).is_err());
        assert!(Kept::StepAnswer.read(Some(1)).is_err(), "no alias where none was written");
    }
}
