//! The application's user entity: which of its tables holds the people who sign in, in which
//! store, and what happens the first time an address the table does not hold signs in.
//!
//! Sign-in's own tables live in the same store, so a sign-in finds or creates the user in the
//! transaction that starts their session. The statements on the user table interpolate only the
//! identifiers declared here (checked to be plain SQL identifiers when the application is built);
//! every value is a parameter.

use async_trait::async_trait;
use serde_json::json;

use super::handlers::{HandlerContext, HandlerError, Subscriber};
use jadpo_core::model::event::Event;
use jadpo_core::model::principal::EntityRecord;
use jadpo_core::model::service_key::verifier;
use jadpo_core::model::sign_in::{EmailAddress, code_verifier, new_code, new_link};

/// What a first sign-in does: by email, an address no user has; by an external token, an
/// identity (issuer, subject) not linked to a user yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstSignIn {
    /// Links an external identity to the user holding its verified email, else creates the user
    /// (id and email; the table's other columns take their defaults).
    Create,
    /// Links an external identity to the user holding its verified email, else refuses; by email,
    /// refuses an address no user has.
    LinkByEmail,
    /// Refuses: users are made, and identities linked, some other way.
    Refuse,
}

/// An OpenID Connect provider whose ID tokens sign users in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcProvider {
    /// Its name in the route (`POST /sign-in/oidc/{name}`).
    pub name: String,
    /// The issuer its tokens carry (`iss`).
    pub issuer: String,
    /// The audience its tokens must be for (`aud`: this application's client id).
    pub audience: String,
    /// The declared connection whose base URL is the issuer's key set (JWKS).
    pub keys_connection: String,
}

impl OidcProvider {
    /// A provider: `name`, its `issuer`, this application's `audience` (client id) and the
    /// connection serving its keys.
    pub fn new(name: &str, issuer: &str, audience: &str, keys_connection: &str) -> Self {
        Self {
            name: name.to_owned(),
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            keys_connection: keys_connection.to_owned(),
        }
    }
}

/// The application's users: an entity (table) with an id column and an email column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntity {
    /// The entity's name (`customer`).
    pub entity: String,
    /// The store its table is in; sign-in's tables are there too.
    pub store: String,
    pub table: String,
    /// The column holding the user id (a principal's id).
    pub id_column: String,
    /// The column holding each user's address, lower-cased.
    pub email_column: String,
    pub first_sign_in: FirstSignIn,
    /// The connection sign-in mail goes out through (`None`: no sign-in by email).
    pub mail_connection: Option<String>,
    /// The OpenID Connect providers whose ID tokens sign users in.
    pub oidc: Vec<OidcProvider>,
}

impl UserEntity {
    /// Users in `table` of `store`, with `id` and `email` columns; first sign-ins refused and no
    /// sign-in by email until [`email_sign_in`](Self::email_sign_in).
    pub fn new(entity: &str, store: &str, table: &str) -> Self {
        Self {
            entity: entity.to_owned(),
            store: store.to_owned(),
            table: table.to_owned(),
            id_column: "id".to_owned(),
            email_column: "email".to_owned(),
            first_sign_in: FirstSignIn::Refuse,
            mail_connection: None,
            oidc: Vec::new(),
        }
    }

    /// Lets people sign in with `provider`'s ID tokens.
    #[must_use]
    pub fn oidc_sign_in(mut self, provider: OidcProvider) -> Self {
        self.oidc.push(provider);
        self
    }

    /// The declared provider `name`.
    pub fn provider(&self, name: &str) -> Option<&OidcProvider> {
        self.oidc.iter().find(|p| p.name == name)
    }

    /// Lets people sign in by a link or code mailed through `connection`.
    #[must_use]
    pub fn email_sign_in(mut self, connection: &str) -> Self {
        self.mail_connection = Some(connection.to_owned());
        self
    }

    /// What a first sign-in does.
    #[must_use]
    pub fn on_first_sign_in(mut self, policy: FirstSignIn) -> Self {
        self.first_sign_in = policy;
        self
    }

    /// The identifiers interpolated into the user statements.
    pub fn identifiers(&self) -> [&str; 4] {
        [&self.entity, &self.table, &self.id_column, &self.email_column]
    }

    /// `($1 email)` → the user's id as `id`.
    pub fn find_by_email_sql(&self) -> String {
        format!(
            "SELECT {} AS id FROM {} WHERE {} = $1",
            self.id_column, self.table, self.email_column
        )
    }

    /// Where its records are, for reading a session with its user's record.
    pub fn record(&self) -> EntityRecord<'_> {
        EntityRecord { table: &self.table, id_column: &self.id_column }
    }

    /// `($1 id)` → the user's address as `email`.
    pub fn email_by_id_sql(&self) -> String {
        format!(
            "SELECT {} AS email FROM {} WHERE {} = $1",
            self.email_column, self.table, self.id_column
        )
    }

    /// `($1 id, $2 email)`: a new user.
    pub fn insert_sql(&self) -> String {
        format!(
            "INSERT INTO {} ({}, {}) VALUES ($1, $2)",
            self.table, self.id_column, self.email_column
        )
    }
}

/// The built-in subscriber that mails a sign-in link and code: it makes both, stores their
/// verifiers on the request (only if the request is still the address's latest) in a
/// transaction of their own, then calls the mail connection, once per attempt. The event carries neither secret, only
/// the address, the request's nonce and when its link and code stop working (counted from the
/// request); a delivery retried after that sends nothing.
#[derive(Debug, Clone)]
pub struct SignInMail {
    /// The mail connection.
    pub connection: String,
}

fn bad_event(detail: &str) -> HandlerError {
    HandlerError::rejected(422, "Bad sign-in event", detail)
}

/// The text at `key` of the runtime's own event's payload.
fn payload_text(event: &Event, key: &str) -> Option<String> {
    event.payload[key].as_str().map(str::to_owned)
}

/// The link a mail carries: the public URL, the address and the token.
pub fn sign_in_link(public_url: &str, address: &str, token: &str) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("email", address)
        .append_pair("token", token)
        .finish();
    format!("{}/sign-in/link?{query}", public_url.trim_end_matches('/'))
}

#[async_trait]
impl Subscriber for SignInMail {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let text = |key: &str| payload_text(event, key);
        let to = text("to").ok_or_else(|| bad_event("no address"))?;
        let nonce = text("nonce").ok_or_else(|| bad_event("no nonce"))?;
        let public_url = text("public_url").ok_or_else(|| bad_event("no public_url"))?;
        let expires_at = text("expires_at")
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.with_timezone(&chrono::Utc))
            .ok_or_else(|| bad_event("no expires_at"))?;
        if expires_at <= ctx.now() {
            // Too late to be of use: a newer request will mail a working pair.
            return Ok(());
        }
        let address = EmailAddress::parse(&to).map_err(|e| bad_event(&e.to_string()))?;
        let store = ctx
            .sign_in_store()
            .ok_or_else(|| HandlerError::Failed("sign-in requests are not reachable".into()))?;
        let fail = |e: jadpo_core::model::sign_in::SignInError| HandlerError::Failed(e.to_string());
        let (link, code) = (new_link().map_err(fail)?, new_code().map_err(fail)?);
        // Armed on its own, before the mail: no transaction is open while the mailer answers.
        // A retry arms a fresh pair and mails it under a key of its own (the earlier mail's
        // link stops working, the new one works).
        let mut tx = store.begin().await?;
        let armed = store
            .sign_in_arm(
                tx.as_mut(),
                &address.digest(),
                &nonce,
                &verifier(&link),
                &code_verifier(&nonce, &code),
                expires_at,
            )
            .await;
        let armed = jadpo_core::transaction::commit_or_rollback(tx, armed).await?;
        if !armed {
            // A newer request (or a sign-in) superseded this one: its mail would not work.
            return Ok(());
        }
        let mail = json!({
            "to": address.as_str(),
            "subject": "Your sign-in link",
            "link": sign_in_link(&public_url, address.as_str(), &link),
            "code": code,
            "expires_at": expires_at,
        });
        ctx.call_each_attempt(&self.connection, "", mail).await?;
        Ok(())
    }
}

/// The built-in subscriber that tells a user by mail that a passkey was added to their account
/// (so a passkey someone else added from a session left open is noticed), through the mail
/// connection, as one recorded call: a retried delivery sends the same mail once.
#[derive(Debug, Clone)]
pub struct PasskeyAddedMail {
    /// The mail connection.
    pub connection: String,
}

#[async_trait]
impl Subscriber for PasskeyAddedMail {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let text = |key: &str| payload_text(event, key);
        let bad = |detail: &str| HandlerError::rejected(422, "Bad passkey event", detail);
        let to = text("to").ok_or_else(|| bad("no address"))?;
        let credential = text("credential_id").ok_or_else(|| bad("no credential_id"))?;
        let added_at = text("added_at").ok_or_else(|| bad("no added_at"))?;
        let address = EmailAddress::parse(&to).map_err(|e| bad(&e.to_string()))?;
        let mail = json!({
            "to": address.as_str(),
            "subject": "A passkey was added to your account",
            "text": format!(
                "A passkey ({credential}) was added to your account at {added_at}. If it was not \
                 you, sign out everywhere and remove your passkeys \
                 (POST /sign-out/everywhere?passkeys=true), then sign in again."
            ),
            "credential_id": credential,
            "added_at": added_at,
        });
        ctx.call(&self.connection, "", mail).await?;
        Ok(())
    }
}
