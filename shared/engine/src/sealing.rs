//! Sealed step answers: a step's answer is stored encrypted with AES-256-GCM under a key from
//! configuration, so the step tables hold no provider answer (a charge's details, a token) in
//! the clear. Each sealed answer names its key's id, so keys rotate: the first key of the ring
//! seals, every key of it opens. The run key, the step's place and its request fingerprint are
//! bound in as associated data, so an answer moved to another step does not open.
//!
//! The ring is written `id:base64key[,id:base64key…]` (standard base64 of 32 random bytes;
//! ids of letters, digits, `-` and `_`, at most 32). [`SealingKeys::generate`] makes one.

use std::collections::BTreeMap;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use data_encoding::BASE64;

/// Bytes of a nonce, stored before the ciphertext.
const NONCE_LEN: usize = 12;

/// Why a key ring was refused, or an answer could not be sealed or opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealingError {
    /// The ring is not `id:base64key,…` with valid ids and 32-byte keys (the keys are never shown).
    #[error("sealing keys must be `id:base64key[,id:base64key…]` with 32-byte keys: {0}")]
    Malformed(String),
    /// An answer was sealed under a key the ring no longer holds.
    #[error("a step answer is sealed under key {0:?}, which the sealing keys do not hold")]
    UnknownKey(String),
    /// An answer did not open: the wrong key under that id, or the stored bytes were altered.
    #[error("a step answer sealed under key {0:?} does not open: wrong key or altered data")]
    DoesNotOpen(String),
    /// The cipher refused to seal (not expected with valid keys).
    #[error("could not seal a step answer")]
    Seal,
}

/// The ring of sealing keys: the first seals, all open.
pub struct SealingKeys {
    current: String,
    keys: BTreeMap<String, Aes256Gcm>,
}

impl std::fmt::Debug for SealingKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys themselves.
        f.debug_struct("SealingKeys")
            .field("current", &self.current)
            .field("ids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 32
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl SealingKeys {
    /// Parses a ring written `id:base64key[,id:base64key…]`; the first key seals.
    pub fn parse(text: &str) -> Result<Self, SealingError> {
        let mut keys = BTreeMap::new();
        let mut current = None;
        for (i, entry) in text.split(',').map(str::trim).enumerate() {
            let (id, encoded) = entry.split_once(':').ok_or_else(|| {
                SealingError::Malformed(format!("entry {} has no `id:` before its key", i + 1))
            })?;
            if !valid_id(id) {
                return Err(SealingError::Malformed(format!(
                    "key id {id:?} must be 1 to 32 letters, digits, `-` or `_`"
                )));
            }
            let bytes = BASE64.decode(encoded.trim().as_bytes()).map_err(|_| {
                SealingError::Malformed(format!("key {id:?} is not standard base64"))
            })?;
            if bytes.len() != 32 {
                return Err(SealingError::Malformed(format!(
                    "key {id:?} is {} bytes, not 32",
                    bytes.len()
                )));
            }
            let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&bytes));
            if keys.insert(id.to_owned(), cipher).is_some() {
                return Err(SealingError::Malformed(format!("key id {id:?} appears twice")));
            }
            current.get_or_insert_with(|| id.to_owned());
        }
        let current = current.ok_or_else(|| SealingError::Malformed("no key".to_owned()))?;
        Ok(Self { current, keys })
    }

    /// A new ring of one random key named `id`, written as [`parse`](Self::parse) reads it.
    pub fn generate(id: &str) -> Result<String, SealingError> {
        if !valid_id(id) {
            return Err(SealingError::Malformed(format!("key id {id:?}")));
        }
        let key = Aes256Gcm::generate_key(OsRng);
        Ok(format!("{id}:{}", BASE64.encode(&key)))
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> &str {
        &self.current
    }

    /// Seals `plain` bound to `context`; the sealed bytes (nonce first) and the key's id.
    pub fn seal(&self, plain: &[u8], context: &[u8]) -> Result<(Vec<u8>, String), SealingError> {
        let cipher = self.keys.get(&self.current).ok_or(SealingError::Seal)?;
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(&nonce, Payload { msg: plain, aad: context })
            .map_err(|_| SealingError::Seal)?;
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok((out, self.current.clone()))
    }

    /// Opens bytes `sealed` under key `key_id`, bound to `context`.
    pub fn open(
        &self,
        key_id: &str,
        sealed: &[u8],
        context: &[u8],
    ) -> Result<Vec<u8>, SealingError> {
        let cipher =
            self.keys.get(key_id).ok_or_else(|| SealingError::UnknownKey(key_id.to_owned()))?;
        let does_not_open = || SealingError::DoesNotOpen(key_id.to_owned());
        if sealed.len() < NONCE_LEN {
            return Err(does_not_open());
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: body, aad: context })
            .map_err(|_| does_not_open())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(text: &str) -> SealingKeys {
        SealingKeys::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn generated(id: &str) -> String {
        SealingKeys::generate(id).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn an_answer_opens_under_its_key_and_context_only() {
        let keys = ring(&generated("k1"));
        let (sealed, id) = keys.seal(b"{\"charge\":\"ch_1\"}", b"run.0").unwrap_or_default();
        assert_eq!(id, "k1");
        assert!(!sealed.windows(6).any(|w| w == b"charge"), "the answer is not in the clear");
        assert_eq!(
            keys.open("k1", &sealed, b"run.0").ok().as_deref(),
            Some(&b"{\"charge\":\"ch_1\"}"[..])
        );
        assert_eq!(keys.open("k1", &sealed, b"run.1"), Err(SealingError::DoesNotOpen("k1".into())));
        let mut altered = sealed.clone();
        if let Some(last) = altered.last_mut() {
            *last ^= 1;
        }
        assert!(keys.open("k1", &altered, b"run.0").is_err());
        assert!(keys.open("k1", &sealed[..5], b"run.0").is_err());
        assert_eq!(keys.open("k0", &sealed, b"run.0"), Err(SealingError::UnknownKey("k0".into())));
    }

    #[test]
    fn a_rotated_ring_seals_with_its_first_key_and_opens_with_every_key() {
        let old = generated("old");
        let (sealed, _) = ring(&old).seal(b"answer", b"ctx").unwrap_or_default();
        let rotated = ring(&format!("{}, {old}", generated("new")));
        assert_eq!(rotated.current_id(), "new");
        assert_eq!(rotated.open("old", &sealed, b"ctx").ok().as_deref(), Some(&b"answer"[..]));
        let wrong = ring(&format!(
            "old:{}",
            generated("x").split_once(':').map(|p| p.1).unwrap_or_default()
        ));
        assert_eq!(
            wrong.open("old", &sealed, b"ctx"),
            Err(SealingError::DoesNotOpen("old".into()))
        );
    }

    #[test]
    fn a_malformed_ring_is_refused_without_showing_a_key() {
        let key = generated("a").split_once(':').map(|p| p.1.to_owned()).unwrap_or_default();
        for (text, says) in [
            ("", "no `id:`"),
            (key.as_str(), "no `id:`"),
            ("a b:xyz", "key id"),
            ("a:not base64!", "not standard base64"),
            ("a:AAAA", "3 bytes, not 32"),
        ] {
            let err = SealingKeys::parse(text).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(says), "{text:?}: {err}");
        }
        let twice = SealingKeys::parse(&format!("a:{key},a:{key}")).err().map(|e| e.to_string());
        assert!(twice.is_some_and(|e| e.contains("twice") && !e.contains(&key)));
        assert!(!format!("{:?}", ring(&format!("a:{key}"))).contains(&key));
    }
}
