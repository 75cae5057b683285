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

fn encoding(row: &Row) -> Result<Option<i16>, StoreError> {
    row.get_opt_i64("encoding")?
        .map(|e| i16::try_from(e).map_err(|_| StoreError::invalid(format!("encoding {e}"))))
        .transpose()
}

fn passkey(row: &Row) -> Result<StoredPasskey, StoreError> {
    Ok(StoredPasskey {
        credential_id: row.get_str("credential_id")?.to_owned(),
        user_id: row.get_str("user_id")?.to_owned(),
        user_handle: row.get_str("user_handle")?.to_owned(),
        credential: row.get_bytes("credential")?.to_vec(),
        counters: row.get_bytes("counters")?.to_vec(),
        encoding: encoding(row)?,
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
                Ok(PasskeyInfo {
                    credential_id: r.get_str("credential_id")?.to_owned(),
                    registered_at: r.get_timestamp("registered_at")?,
                    last_used_at: r.get_opt_timestamp("last_used_at")?,
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
            bound_to: c.bound_to.as_deref().map(ToOwned::to_owned),
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
            Ok(TakenChallenge {
                bound_to: r.get_opt_str("bound_to")?.map(str::to_owned),
                state: r.get_bytes("state")?.to_vec(),
                encoding: encoding(&r)?,
                expires_at: r.get_timestamp("expires_at")?,
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
