//! Group commit: the transactions of one store that meet at its connection share one synced
//! `COMMIT`.
//!
//! Why: a store's every transaction takes its one connection in turn, and with
//! `synchronous=FULL` each `COMMIT` holds it for the length of an `fsync` — under concurrent
//! load (HTTP commits beside delivery workers) the syncs, not the statements, set the pace. So
//! a transaction is a *member*: a savepoint inside an outer transaction (the *group*) that stays
//! open while others wait for the connection. A member's commit releases its savepoint, hands
//! the connection to whoever waits, then takes it again and — unless a later member already did
//! — commits the group. Every member's commit returns only once the group's `COMMIT` (and its
//! sync) is done, with that `COMMIT`'s result: nobody hears "committed" before the sync, so a
//! crash loses only members whose callers have not been answered. A member that rolls back undoes
//! only its savepoint. With nobody waiting, a member takes the connection straight back and
//! commits alone, as before.
//!
//! What a caller can see: a member reads what members before it in the same group wrote (work
//! whose commit has not returned yet, and will return `Ok` unless the sync itself fails — then
//! every member of the group gets the error). Statements outside a transaction
//! (`query_once`, `execute_once`, migrations) commit any open group first, so they never read or
//! join unsynced work — except an advisory write (a relay mark), which needs no sync of its own:
//! it joins the open group and returns at once, and the group's `COMMIT` carries it.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use jadpo_core::{StoreError, StoreErrorKind};
use rusqlite::Connection;
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::error::translate;

/// The savepoint each member runs in.
const MEMBER: &str = "jadpo_member";

/// The store's connection and the group open on it, if any.
pub(crate) struct Conn {
    conn: Connection,
    group: Option<Arc<Group>>,
    /// Members of the open group that released their savepoint and wait for its `COMMIT`.
    pending: usize,
}

/// One outer transaction and, once it ended, how.
#[derive(Default)]
pub(crate) struct Group {
    outcome: OnceLock<Result<(), (StoreErrorKind, String)>>,
}

impl Group {
    fn result(&self) -> Option<Result<(), StoreError>> {
        let outcome = self.outcome.get()?;
        Some(outcome.clone().map_err(|(kind, message)| StoreError::new(kind, message)))
    }
}

/// The connection shared by a store's transactions.
pub(crate) type Shared = Arc<Mutex<Conn>>;

impl Deref for Conn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Conn {
    pub(crate) fn new(conn: Connection) -> Shared {
        Arc::new(Mutex::new(Self { conn, group: None, pending: 0 }))
    }

    /// Opens a member: joins the open group or starts one (`BEGIN IMMEDIATE`, which waits out
    /// another process's write lock), then opens the member's savepoint.
    pub(crate) fn join(&mut self) -> Result<Arc<Group>, StoreError> {
        self.check_alive();
        if self.group.is_none() {
            self.conn.execute_batch("BEGIN IMMEDIATE").map_err(translate)?;
        }
        let group = Arc::clone(self.group.get_or_insert_with(Arc::default));
        if let Err(e) = self.conn.execute_batch(&format!("SAVEPOINT {MEMBER}")) {
            self.settle();
            return Err(translate(e));
        }
        Ok(group)
    }

    /// Keeps the member's work for the group's `COMMIT`.
    pub(crate) fn release(&mut self) -> Result<(), StoreError> {
        match self.conn.execute_batch(&format!("RELEASE {MEMBER}")) {
            Ok(()) if self.check_alive() => {
                self.pending += 1;
                Ok(())
            }
            Ok(()) => Err(lost("the transaction ended before its commit")),
            Err(e) => {
                self.undo();
                Err(translate(e))
            }
        }
    }

    /// Undoes the member's work and leaves the group to its other members, ending it when none
    /// waits for its `COMMIT`.
    pub(crate) fn undo(&mut self) {
        if !self.conn.is_autocommit() {
            let undo = format!("ROLLBACK TO {MEMBER}; RELEASE {MEMBER}");
            // A savepoint that is gone (SQLite rolled the whole group back) is found just below.
            let _ = self.conn.execute_batch(&undo);
        }
        self.settle();
    }

    /// Whether a group is open: members wait for its `COMMIT`, which one of them will make.
    pub(crate) fn group_open(&mut self) -> bool {
        self.check_alive() && self.group.is_some()
    }

    /// Commits the open group, if any, so that what follows runs outside every member.
    pub(crate) fn commit_open(&mut self) {
        self.check_alive();
        if let Some(group) = self.group.take() {
            self.pending = 0;
            let result = self.conn.execute_batch("COMMIT").map_err(|e| {
                // A failed COMMIT leaves the transaction open.
                let _ = self.conn.execute_batch("ROLLBACK");
                let e = translate(e);
                (e.kind(), format!("{} (the commit shared with other transactions)", e.message()))
            });
            let _ = group.outcome.set(result);
        }
    }

    /// Commits `group` unless that is done already; returns how it ended.
    pub(crate) fn finish(&mut self, group: &Group) -> Result<(), StoreError> {
        if let Some(result) = group.result() {
            return result;
        }
        if self.group.as_deref().is_some_and(|open| std::ptr::eq(open, group)) {
            self.commit_open();
        }
        group.result().unwrap_or_else(|| {
            Err(StoreError::new(
                StoreErrorKind::Internal,
                "sqlite: a group ended without an outcome",
            ))
        })
    }

    /// Ends a group nobody waits for (its members all rolled back).
    fn settle(&mut self) {
        if !self.check_alive() || self.pending > 0 {
            return;
        }
        if let Some(group) = self.group.take() {
            let _ = self.conn.execute_batch("ROLLBACK");
            let _ = group.outcome.set(Ok(()));
        }
    }

    /// Whether the open group, if any, is still a transaction. SQLite rolls a whole transaction
    /// back after some errors (a full disk, an I/O error); the members waiting for its `COMMIT`
    /// are then told their work is gone.
    fn check_alive(&mut self) -> bool {
        if self.group.is_none() || !self.conn.is_autocommit() {
            return true;
        }
        if let Some(group) = self.group.take() {
            self.pending = 0;
            let message = "the transaction was rolled back by SQLite after an error";
            let _ =
                group.outcome.set(Err((StoreErrorKind::Unavailable, format!("sqlite: {message}"))));
        }
        false
    }
}

fn lost(why: &str) -> StoreError {
    StoreError::new(StoreErrorKind::Unavailable, format!("sqlite: {why}"))
}

/// Takes the connection with no group open on it.
pub(crate) async fn idle(shared: &Shared) -> OwnedMutexGuard<Conn> {
    let mut conn = Arc::clone(shared).lock_owned().await;
    conn.commit_open();
    conn
}

/// Waits for `group`'s `COMMIT`, making it once the connection comes back if nobody did. If the
/// caller stops waiting (its future dropped), a task makes it instead, so the group's other
/// members and the write lock are never left waiting on a caller that left.
pub(crate) async fn wait(shared: &Shared, group: Arc<Group>) -> Result<(), StoreError> {
    let mut watch = FinishOnDrop { shared: Some(Arc::clone(shared)), group: Arc::clone(&group) };
    let result = Arc::clone(shared).lock_owned().await.finish(&group);
    watch.shared = None;
    result
}

struct FinishOnDrop {
    shared: Option<Shared>,
    group: Arc<Group>,
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        let Some(shared) = self.shared.take() else { return };
        if self.group.outcome.get().is_some() {
            return;
        }
        let group = Arc::clone(&self.group);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = shared.lock_owned().await.finish(&group);
            });
        }
    }
}
