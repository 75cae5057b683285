//! Passkeys (WebAuthn): what Jadpo keeps of each registered passkey (`jadpo_passkeys`) and of each
//! ceremony under way (`jadpo_passkey_challenges`).
//!
//! A passkey holds no secret — its private key never leaves the person's device — but the
//! challenge a ceremony sends is kept only as its verifier, like every other one-time value, and
//! a ceremony is finished at most once: finishing deletes its row. The credential and the
//! ceremony state are bytes in the relying-party library's binary form; `encoding` names that
//! form so a later release reads each row by the form it was written in.

use chrono::{DateTime, Utc};

/// The binary form this release writes: `webauthn_rp` 0.3's `bin` encoding (a credential's static
/// state; its counters; a ceremony's server state with its 16-byte challenge zeroed), numbered
/// [`WEBAUTHN_RP_BIN`](crate::model::encoding::WEBAUTHN_RP_BIN) (rows written as `1` before the
/// numbering was shared are renumbered by migration 18; `NULL` reads as this form).
pub const ENCODING: i16 = crate::model::encoding::WEBAUTHN_RP_BIN.number;

/// What a ceremony does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A signed-in user adds a passkey.
    Register,
    /// Someone signs in with a passkey.
    SignIn,
}

impl Purpose {
    /// The stored form (`register`, `sign_in`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Register => "register",
            Self::SignIn => "sign_in",
        }
    }
}

/// A ceremony as it is stored when it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChallenge {
    /// The verifier (SHA-256, hex) of the challenge sent to the browser.
    pub verifier: String,
    pub purpose: Purpose,
    /// The user a registration is for (`None` for a sign-in: the passkey says who).
    pub bound_to: Option<String>,
    /// The ceremony's state, its challenge zeroed, in form [`ENCODING`].
    pub state: Vec<u8>,
    pub expires_at: DateTime<Utc>,
}

/// A ceremony taken (deleted) to be finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenChallenge {
    pub bound_to: Option<String>,
    pub state: Vec<u8>,
    /// `None`: written before encodings were recorded (read as `webauthn_rp_bin`, the one form passkeys were first kept in).
    pub encoding: Option<i16>,
    pub expires_at: DateTime<Utc>,
}

/// A registered passkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPasskey {
    /// The credential id, base64url without padding.
    pub credential_id: String,
    pub user_id: String,
    /// The user handle the device keeps (base64url): one per user, the same for each passkey.
    pub user_handle: String,
    /// The credential's public key and extension state.
    pub credential: Vec<u8>,
    /// What changes at each sign-in: signature count, backup state, user verification.
    pub counters: Vec<u8>,
    /// `None`: written before encodings were recorded (read as `webauthn_rp_bin`, the one form passkeys were first kept in).
    pub encoding: Option<i16>,
}

/// A registered passkey as its user lists it: never its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyInfo {
    /// The credential id, base64url without padding.
    pub credential_id: String,
    pub registered_at: chrono::DateTime<chrono::Utc>,
    /// The last sign-in with it, if any.
    pub last_used_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Why a passkey ceremony was refused. Nothing changed, except that the ceremony, once presented,
/// is used up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasskeyRefusal {
    /// The server's public URL cannot be a WebAuthn relying party (an IP address, no host).
    #[error("passkeys need JADPO_PUBLIC_URL to name a host (https://…, or http://localhost): {0}")]
    NoRelyingParty(String),
    /// The body is not a WebAuthn response.
    #[error("not a WebAuthn response: {0}")]
    Malformed(String),
    /// No ceremony under way has this challenge (never started, finished, or for another user),
    /// or it expired.
    #[error("no passkey ceremony is under way for this challenge: start again")]
    NoCeremony,
    /// The response does not pass the ceremony's checks (origin, signature, flags…).
    #[error("the passkey's response was refused: {0}")]
    Refused(String),
    /// The passkey is registered already.
    #[error("this passkey is registered already")]
    AlreadyRegistered,
    /// No passkey has the presented credential id (or its user is gone).
    #[error("this passkey is not registered here")]
    UnknownPasskey,
    /// A stored credential or ceremony cannot be read (a bug or an unknown encoding).
    #[error("a stored passkey value cannot be read: {0}")]
    Unreadable(String),
}
