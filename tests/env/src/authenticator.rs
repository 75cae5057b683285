//! A software authenticator: what a person's device does in the two WebAuthn ceremonies, so the
//! passkey routes are tested with real responses (an Ed25519 passkey, "none" attestation, user
//! present and verified), built byte for byte as the WebAuthn and CTAP2 specifications lay them
//! out and as `PublicKeyCredential.toJSON()` sends them.

use data_encoding::BASE64URL_NOPAD as B64;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Flags in the authenticator data: user present, user verified, attested credential data.
const UP: u8 = 0x01;
const UV: u8 = 0x04;
const AT: u8 = 0x40;

/// One device holding one passkey for one site.
#[derive(Clone)]
pub struct Authenticator {
    key: SigningKey,
    credential_id: Vec<u8>,
    /// The user handle the site gave at registration; the device returns it at each sign-in.
    user_handle: Option<String>,
    sign_count: u32,
    origin: String,
    rp_id: String,
}

/// A CBOR header: major type `major`, argument `n` (short forms only: what these values need).
fn cbor_head(major: u8, n: usize) -> Vec<u8> {
    let m = major << 5;
    match n {
        0..=23 => vec![m | n as u8],
        24..=255 => vec![m | 24, n as u8],
        _ => vec![m | 25, (n >> 8) as u8, n as u8],
    }
}

fn cbor_text(s: &str) -> Vec<u8> {
    [cbor_head(3, s.len()), s.as_bytes().to_vec()].concat()
}

fn cbor_bytes(b: &[u8]) -> Vec<u8> {
    [cbor_head(2, b.len()), b.to_vec()].concat()
}

impl Authenticator {
    /// A device at `origin` (`http://localhost:3000`) whose passkeys are for `rp_id`
    /// (`localhost`); `seed` makes its key and credential id.
    pub fn new(seed: u8, origin: &str, rp_id: &str) -> Self {
        Self {
            key: SigningKey::from_bytes(&[seed; 32]),
            credential_id: Sha256::digest([seed, 0xC1]).to_vec(),
            user_handle: None,
            sign_count: 0,
            origin: origin.to_owned(),
            rp_id: rp_id.to_owned(),
        }
    }

    /// The credential id, base64url, as the site stores it.
    pub fn credential_id(&self) -> String {
        B64.encode(&self.credential_id)
    }

    /// Presents itself at another origin (a phishing site relaying the ceremony).
    pub fn at_origin(mut self, origin: &str) -> Self {
        self.origin = origin.to_owned();
        self
    }

    /// The client data a browser collects, its members in the order browsers write them.
    fn client_data(&self, kind: &str, options: &Value) -> Vec<u8> {
        let challenge = options["publicKey"]["challenge"].as_str().unwrap_or_default();
        format!(
            r#"{{"type":{},"challenge":{},"origin":{},"crossOrigin":false}}"#,
            json!(kind),
            json!(challenge),
            json!(self.origin)
        )
        .into_bytes()
    }

    fn auth_data_head(&self, flags: u8) -> Vec<u8> {
        let mut data = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        data.push(flags);
        data.extend_from_slice(&self.sign_count.to_be_bytes());
        data
    }

    /// The public key as a COSE key: OKP, EdDSA, Ed25519, x (CTAP2 canonical order).
    fn cose_key(&self) -> Vec<u8> {
        let x = self.key.verifying_key().to_bytes();
        [vec![0xa4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21], cbor_bytes(&x)].concat()
    }

    /// The device's answer to `navigator.credentials.create(options)`, as `toJSON()` sends it.
    pub fn create(&mut self, options: &Value) -> Value {
        self.user_handle = options["publicKey"]["user"]["id"].as_str().map(str::to_owned);
        let client_data = self.client_data("webauthn.create", options);
        let mut auth_data = self.auth_data_head(UP | UV | AT);
        auth_data.extend_from_slice(&[0; 16]); // AAGUID: none
        auth_data.extend_from_slice(&(self.credential_id.len() as u16).to_be_bytes());
        auth_data.extend_from_slice(&self.credential_id);
        auth_data.extend_from_slice(&self.cose_key());
        let attestation = [
            vec![0xa3],
            cbor_text("fmt"),
            cbor_text("none"),
            cbor_text("attStmt"),
            vec![0xa0],
            cbor_text("authData"),
            cbor_bytes(&auth_data),
        ]
        .concat();
        json!({
            "id": self.credential_id(),
            "rawId": self.credential_id(),
            "type": "public-key",
            "response": {
                "clientDataJSON": B64.encode(&client_data),
                "attestationObject": B64.encode(&attestation),
                "transports": ["internal"],
            },
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        })
    }

    /// The device's answer to `navigator.credentials.get(options)`: the passkey it holds for the
    /// site, signed over the authenticator data and the client data's hash.
    pub fn get(&mut self, options: &Value) -> Value {
        self.sign_count += 1;
        let client_data = self.client_data("webauthn.get", options);
        let auth_data = self.auth_data_head(UP | UV);
        let signed = [auth_data.clone(), Sha256::digest(&client_data).to_vec()].concat();
        let signature = self.key.sign(&signed).to_bytes();
        json!({
            "id": self.credential_id(),
            "rawId": self.credential_id(),
            "type": "public-key",
            "response": {
                "clientDataJSON": B64.encode(&client_data),
                "authenticatorData": B64.encode(&auth_data),
                "signature": B64.encode(&signature),
                "userHandle": self.user_handle,
            },
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        })
    }
}
