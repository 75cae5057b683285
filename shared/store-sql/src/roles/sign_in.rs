//! The sign-in request role implemented once over each adapter's own SQL. The row is read under
//! the transaction's lock, decided here, and changed by conditional updates, so a link or code is
//! used at most once however many requests race for it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::service_key::{random_secret, verifier};
use jadpo_core::model::sign_in::{
    Redeemed, Requested, SEND_WINDOW, SignInError, SignInLimits, SourceWindow, code_verifier,
    is_link,
};
use jadpo_core::ports::SignInStore;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::rows::first_count;
use crate::store::SqlStore;
use crate::tables::sign_in;

crate::columns! {
    /// A sign-in request (`SignInSql::request_find`).
    struct RequestColumns {
        nonce: String,
        window_started_at: DateTime<Utc>,
        sends_in_window: i64,
        code_verifier: Option<String>,
        wrong_codes: i64,
        expires_at: DateTime<Utc>,
        used_at: Option<DateTime<Utc>>,
    }
    /// A sign-in source (`SignInSql::source_find`).
    struct SourceColumns { window_started_at: DateTime<Utc>, sends_in_window: i64, wrong_codes: i64 }
    /// `SignInSql::link_find`.
    struct LinkColumns { user_id: String }
}

/// The counted sends of a request at `now`: a window older than an hour starts again.
fn window(row: &RequestColumns, now: DateTime<Utc>) -> (DateTime<Utc>, i64) {
    let started = row.window_started_at;
    let window = chrono::Duration::from_std(SEND_WINDOW).unwrap_or(chrono::Duration::MAX);
    if started + window <= now {
        return (now, 0);
    }
    (started, row.sends_in_window)
}

fn live(row: &RequestColumns, now: DateTime<Utc>) -> bool {
    row.code_verifier.is_some() && row.used_at.is_none() && row.expires_at > now
}

impl<C: TransactionalStore> SqlStore<C> {
    async fn sign_in_row(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
    ) -> Result<Option<RequestColumns>, StoreError> {
        let row = self
            .sql
            .sign_in
            .request_find
            .query_opt(tx, sign_in::RequestFind { address_digest: digest.into() })
            .await?;
        row.as_ref().map(RequestColumns::read).transpose()
    }
}

#[async_trait]
impl<C: TransactionalStore> SignInStore for SqlStore<C> {
    async fn sign_in_request(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        now: DateTime<Utc>,
        limits: SignInLimits,
    ) -> Result<Requested, SignInError> {
        let sql = self.sql.sign_in;
        sql.request_ensure
            .execute(tx, sign_in::RequestEnsure { address_digest: digest.into(), now })
            .await?;
        let row = self
            .sign_in_row(tx, digest)
            .await?
            .ok_or_else(|| StoreError::internal("a sign-in request row vanished"))?;
        let (started, sends) = window(&row, now);
        if sends >= i64::from(limits.sends_per_hour) {
            return Err(SignInError::TooMany);
        }
        let nonce = random_secret("").map_err(SignInError::Random)?;
        let params = sign_in::RequestRenew {
            address_digest: digest.into(),
            nonce: nonce.as_str().into(),
            now,
            window_started_at: started,
            sends_in_window: (sends + 1),
        };
        sql.request_renew.execute(tx, params).await?;
        Ok(Requested { nonce })
    }

    async fn sign_in_arm(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        nonce: &str,
        link_verifier: &str,
        code_verifier: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = sign_in::RequestArm {
            address_digest: digest.into(),
            nonce: nonce.into(),
            link_verifier: link_verifier.into(),
            code_verifier: code_verifier.into(),
            expires_at,
        };
        Ok(self.sql.sign_in.request_arm.execute(tx, params).await? == 1)
    }

    async fn sign_in_redeem_link(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        link: &str,
        now: DateTime<Utc>,
    ) -> Result<Redeemed, StoreError> {
        if !is_link(link) {
            return Ok(Redeemed::NotLive);
        }
        let params = sign_in::RequestRedeemLink {
            address_digest: digest.into(),
            link_verifier: verifier(link),
            now,
        };
        let used = self.sql.sign_in.request_redeem_link.execute(tx, params).await?;
        Ok(if used == 1 { Redeemed::SignedIn } else { Redeemed::NotLive })
    }

    async fn sign_in_redeem_code(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        code: &str,
        now: DateTime<Utc>,
        limits: SignInLimits,
    ) -> Result<Redeemed, StoreError> {
        let sql = self.sql.sign_in;
        let Some(row) = self.sign_in_row(tx, digest).await? else {
            return Ok(Redeemed::NotLive);
        };
        if !live(&row, now) {
            return Ok(Redeemed::NotLive);
        }
        let presented = code_verifier(&row.nonce, code);
        let params = sign_in::RequestRedeemCode {
            address_digest: digest.into(),
            code_verifier: presented.as_str().into(),
            now,
        };
        if sql.request_redeem_code.execute(tx, params).await? == 1 {
            return Ok(Redeemed::SignedIn);
        }
        let wrong = row.wrong_codes + 1;
        sql.request_wrong_code
            .execute(
                tx,
                sign_in::RequestWrongCode { address_digest: digest.into(), wrong_codes: wrong },
            )
            .await?;
        let max = i64::from(limits.wrong_codes);
        if wrong >= max {
            sql.request_lock
                .execute(tx, sign_in::RequestLock { address_digest: digest.into() })
                .await?;
        }
        Ok(Redeemed::Wrong { left: u32::try_from(max - wrong).unwrap_or(0) })
    }

    async fn sign_in_link_find(
        &self,
        tx: &mut dyn Transaction,
        issuer: &str,
        subject: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        let sql = self.sql.sign_in;
        let row = sql
            .link_find
            .query_opt(tx, sign_in::LinkFind { issuer: issuer.into(), subject: subject.into() })
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        sql.link_seen
            .execute(tx, sign_in::LinkSeen { issuer: issuer.into(), subject: subject.into(), now })
            .await?;
        Ok(Some(LinkColumns::read(&row)?.user_id))
    }

    async fn sign_in_source(
        &self,
        tx: &mut dyn Transaction,
        source_digest: &str,
        now: DateTime<Utc>,
    ) -> Result<SourceWindow, StoreError> {
        let sql = self.sql.sign_in;
        sql.source_ensure
            .execute(tx, sign_in::SourceEnsure { source_digest: source_digest.into(), now })
            .await?;
        let row = sql
            .source_find
            .query_opt(tx, sign_in::SourceFind { source_digest: source_digest.into() })
            .await?
            .ok_or_else(|| StoreError::internal("a sign-in source row vanished"))?;
        let row = SourceColumns::read(&row)?;
        let count = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
        let window = SourceWindow {
            started_at: row.window_started_at,
            sends: count(row.sends_in_window),
            wrong_codes: count(row.wrong_codes),
        };
        Ok(window.at(now))
    }

    async fn sign_in_source_set(
        &self,
        tx: &mut dyn Transaction,
        source_digest: &str,
        window: SourceWindow,
    ) -> Result<(), StoreError> {
        let params = sign_in::SourceSet {
            source_digest: source_digest.into(),
            window_started_at: window.started_at,
            sends_in_window: i64::from(window.sends),
            wrong_codes: i64::from(window.wrong_codes),
        };
        self.sql.sign_in.source_set.execute(tx, params).await?;
        Ok(())
    }

    async fn sign_in_sends_since(
        &self,
        tx: &mut dyn Transaction,
        since: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        first_count(&self.sql.sign_in.sends_since.query(tx, sign_in::SendsSince { since }).await?)
    }

    async fn sign_in_token_spend(
        &self,
        tx: &mut dyn Transaction,
        token_digest: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = sign_in::TokenSpend { token_digest: token_digest.into(), expires_at };
        Ok(self.sql.sign_in.token_spend.execute(tx, params).await? == 1)
    }

    async fn sign_in_link_insert(
        &self,
        tx: &mut dyn Transaction,
        issuer: &str,
        subject: &str,
        user_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let params = sign_in::LinkInsert {
            issuer: issuer.into(),
            subject: subject.into(),
            user_id: user_id.into(),
            now,
        };
        self.sql.sign_in.link_insert.execute(tx, params).await?;
        Ok(())
    }
}
