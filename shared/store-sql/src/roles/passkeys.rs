//! The passkey role implemented once over each adapter's own SQL. A ceremony is taken with one
//! `DELETE … RETURNING`, so however many requests race to finish it, one gets its state.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::passkey::{
    ENCODING, NewChallenge, PasskeyInfo, Purpose, StoredPasskey, TakenChallenge,
};
use jadpo_core::model::principal::EntityRecord;
use jadpo_core::ports::PasskeyStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::statement::Params;
use crate::store::SqlStore;
use crate::tables::passkeys;

crate::columns! {
    /// A passkey (`PasskeySql::find`, `of_user`).
    struct PasskeyColumns {
        credential_id: String,
        user_id: String,
        user_handle: String,
        credential: Vec<u8>,
        counters: Vec<u8>,
        encoding: Option<i64>,
    }
    /// `PasskeySql::listed`.
    struct ListedColumns {
        credential_id: String,
        registered_at: DateTime<Utc>,
        last_used_at: Option<DateTime<Utc>>,
    }
    /// `PasskeySql::challenge_take`.
    struct ChallengeColumns {
        bound_to: Option<String>,
        state: Vec<u8>,
        encoding: Option<i64>,
        expires_at: DateTime<Utc>,
    }
}

fn encoding(stored: Option<i64>) -> Result<Option<i16>, StoreError> {
    stored
        .map(|e| i16::try_from(e).map_err(|_| StoreError::invalid(format!("encoding {e}"))))
        .transpose()
}

fn passkey(row: &Row) -> Result<StoredPasskey, StoreError> {
    let p = PasskeyColumns::read(row)?;
    Ok(StoredPasskey {
        credential_id: p.credential_id,
        user_id: p.user_id,
        user_handle: p.user_handle,
        credential: p.credential,
        counters: p.counters,
        encoding: encoding(p.encoding)?,
    })
}

#[async_trait]
impl<C: TransactionalStore> PasskeyStore for SqlStore<C> {
    async fn passkeys_listed(&self, user_id: &str) -> Result<Vec<PasskeyInfo>, StoreError> {
        let rows = self
            .sql
            .passkeys
            .listed
            .query_once(self, passkeys::Listed { user_id: user_id.into() })
            .await?;
        rows.iter()
            .map(|r| {
                let l = ListedColumns::read(r)?;
                Ok(PasskeyInfo {
                    credential_id: l.credential_id,
                    registered_at: l.registered_at,
                    last_used_at: l.last_used_at,
                })
            })
            .collect()
    }

    async fn passkeys_remove_all(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
    ) -> Result<u64, StoreError> {
        self.sql
            .passkeys
            .remove_all
            .execute(tx, passkeys::RemoveAll { user_id: user_id.into() })
            .await
    }

    async fn passkey_remove(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        credential_id: &str,
    ) -> Result<bool, StoreError> {
        let params =
            passkeys::Remove { credential_id: credential_id.into(), user_id: user_id.into() };
        Ok(self.sql.passkeys.remove.execute(tx, params).await? > 0)
    }

    async fn passkey_challenge_insert(
        &self,
        tx: &mut dyn Transaction,
        c: &NewChallenge,
    ) -> Result<(), StoreError> {
        let params = passkeys::ChallengeInsert {
            challenge_verifier: c.verifier.as_str().into(),
            purpose: c.purpose.as_str().into(),
            bound_to: c.bound_to.clone(),
            state: c.state.clone(),
            encoding: i64::from(ENCODING),
            expires_at: c.expires_at,
        };
        self.sql.passkeys.challenge_insert.execute(tx, params).await?;
        Ok(())
    }

    async fn passkey_challenge_take(
        &self,
        tx: &mut dyn Transaction,
        verifier: &str,
        purpose: Purpose,
    ) -> Result<Option<TakenChallenge>, StoreError> {
        let params = passkeys::ChallengeTake {
            challenge_verifier: verifier.into(),
            purpose: purpose.as_str().into(),
        };
        let row = self.sql.passkeys.challenge_take.query_opt(tx, params).await?;
        row.map(|r| {
            let c = ChallengeColumns::read(&r)?;
            Ok(TakenChallenge {
                bound_to: c.bound_to,
                state: c.state,
                encoding: encoding(c.encoding)?,
                expires_at: c.expires_at,
            })
        })
        .transpose()
    }

    async fn passkeys_of_user(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
    ) -> Result<Vec<StoredPasskey>, StoreError> {
        self.sql
            .passkeys
            .of_user
            .query(tx, passkeys::OfUser { user_id: user_id.into() })
            .await?
            .iter()
            .map(passkey)
            .collect()
    }

    async fn passkey_insert(
        &self,
        tx: &mut dyn Transaction,
        p: &StoredPasskey,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = passkeys::Insert {
            credential_id: p.credential_id.as_str().into(),
            user_id: p.user_id.as_str().into(),
            user_handle: p.user_handle.as_str().into(),
            credential: p.credential.clone(),
            counters: p.counters.clone(),
            encoding: i64::from(ENCODING),
            now,
        };
        Ok(self.sql.passkeys.insert.execute(tx, params).await? == 1)
    }

    async fn passkey_find(
        &self,
        tx: &mut dyn Transaction,
        credential_id: &str,
        users: Option<EntityRecord<'_>>,
    ) -> Result<Option<StoredPasskey>, StoreError> {
        let find = self.sql.passkeys.find;
        let params = passkeys::Find { credential_id: credential_id.into() };
        let row = match users {
            None => find.query_opt(tx, params).await?,
            Some(u) => {
                tx.query_opt(&u.narrow(find.text(), "user_id"), params.bind().as_ref()).await?
            }
        };
        row.as_ref().map(passkey).transpose()
    }

    async fn passkey_used(
        &self,
        tx: &mut dyn Transaction,
        credential_id: &str,
        counters: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let params = passkeys::Used {
            credential_id: credential_id.into(),
            counters: counters.to_vec(),
            now,
        };
        self.sql.passkeys.used.execute(tx, params).await?;
        Ok(())
    }
}
