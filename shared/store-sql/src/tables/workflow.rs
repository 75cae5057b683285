//! `WorkflowSql`: the slots of the workflow role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for the workflow tables.
    pub struct WorkflowSql {
        /// Returns `revision`, locking the row where the dialect can (a transition's guarded
        /// update reads it only to say what the revision was when the guard refused).
        execution_lock: ExecutionLock(run_id: String),
        /// Returns the execution's row.
        execution_get: ExecutionGet(run_id: String),
        /// Returns `owner` of the run.
        execution_owner: ExecutionOwner(run_id: String),
        /// One event of a run's log.
        event_insert: EventInsert(
            id: String,
            run_id: String,
            seq: i64,
            event_type: String,
            payload: serde_json::Value,
            timestamp: i64,
            actor: Option<String>,
        ),
        /// A transition's events in one statement: `events` is a JSON array of
        /// `{id, seq, type, payload, timestamp}`, in order.
        events_insert: EventsInsert(run_id: String, actor: Option<String>, events: serde_json::Value),
        /// Returns `seq` and `actor` of a run's events that have an actor.
        event_actors: EventActors(run_id: String),
        /// Returns events in `seq` order: `seq, type, payload, timestamp`.
        events_list: EventsList(run_id: String),
        /// Returns at most `limit` events after `after_seq` in `seq` order: `seq, type, payload,
        /// timestamp, actor`.
        events_page: EventsPage(run_id: String, after_seq: i64, limit: i64),
        /// One new command, pending.
        command_insert: CommandInsert(
            id: String,
            run_id: String,
            seq: i64,
            node_id: String,
            command_type: String,
            payload: serde_json::Value,
            idempotency_key: Option<String>,
            created_at: DateTime<Utc>,
        ),
        /// On a pending (or `claimed`) command.
        command_ack: CommandAck(id: String, status: String, processed_at: DateTime<Utc>),
        /// Returns `user_id, revision`, locking the row where the dialect can.
        session_lock: SessionLock(session_id: String),
        /// Bind the Session to the run, if its revision is still the expected one.
        session_bind: SessionBind(
            session_id: String,
            run_id: String,
            now: DateTime<Utc>,
            expected_revision: i64,
        ),
        /// A new Session; `owner` may be NULL.
        session_insert: SessionInsert(
            id: String,
            user_id: String,
            context: serde_json::Value,
            now: DateTime<Utc>,
            owner: Option<String>,
        ),
        /// Returns the Session row.
        session_get: SessionGet(id: String),
        /// Replace the context.
        session_update_context: SessionUpdateContext(
            id: String,
            user_id: String,
            context: serde_json::Value,
            now: DateTime<Utc>,
            expected_revision: i64,
            context_changed: i64,
        ),
        /// Returns `lease_id` when acquired (free or expired), no row when another holder's lease is
        /// live.
        run_lease_take: RunLeaseTake(
            run_id: String,
            worker_id: String,
            lease_id: String,
            expires_at: i64,
            now: i64,
        ),
        /// Extend a live lease.
        run_lease_extend: RunLeaseExtend(
            run_id: String,
            lease_id: String,
            expires_at: i64,
            now: i64,
        ),
        /// Release.
        run_lease_give_up: RunLeaseGiveUp(run_id: String, lease_id: String),
        /// Returns a row while that lease is live, locking it where the dialect can.
        run_lease_fence: RunLeaseFence(run_id: String, lease_id: String, now: i64),
        /// Ends that lease if it is live, returning a row when it was.
        run_lease_end: RunLeaseEnd(run_id: String, lease_id: String, now: i64),
        /// Renews that lease to `expires_at` if it is live, returning a row when it was.
        run_lease_renew: RunLeaseRenew(
            run_id: String,
            lease_id: String,
            now: i64,
            expires_at: i64,
        ),
        /// Returns `run_id` of running or cancelling runs with no live lease.
        runnable: Runnable(now: i64, limit: i64),
        /// Returns `run_id, worker_id, lease_id, expires_at` of leases expired at `now`, oldest
        /// first.
        leases_expired: LeasesExpired(now: i64, limit: i64),
        /// Delete that lease if it is still expired at `now`.
        lease_clear_expired: LeaseClearExpired(run_id: String, lease_id: String, now: i64),
        /// Returns `command_id` of the run's pending (and `claimed`) commands, stamped as enqueued at `now`.
        commands_resend_for_run: CommandsResendForRun(run_id: String, now: DateTime<Utc>),
        /// Returns a command row: `id, run_id, node_id, type, payload, status, idempotency_key`.
        command_get: CommandGet(id: String),
        /// Returns `command_id` of pending (and `claimed`) commands of live runs never put on the queue or put there
        /// before `lost_before`, stamped as enqueued at `now`.
        commands_claim_due: CommandsClaimDue(now: DateTime<Utc>, lost_before: DateTime<Utc>, limit: i64),
        /// Stamp a command as put on the queue (insert or refresh).
        command_mark_enqueued: CommandMarkEnqueued(command_id: String, run_id: String, now: DateTime<Utc>),
        /// Returns `run_id, revision, last_seq` of runs whose events all have `${run_id}:${seq}`
        /// ids and whose revision differs from their last event's seq.
        verify_revisions: VerifyRevisions(),
        /// Returns `pairs`: `(run_id, seq)` pairs that repeat, and `ids`: event ids that repeat.
        verify_event_ids: VerifyEventIds(),
        /// Returns `run_id, seq` of the `limit` events after `(after_run, after_seq)`, in order.
        events_page_end: EventsPageEnd(after_run: String, after_seq: i64, limit: i64),
        /// Rewrite events in `((from_run, from_seq), (to_run, to_seq)]` whose payload is not the
        /// complete serialized event into it.
        events_upgrade_range: EventsUpgradeRange(
            from_run: String,
            from_seq: i64,
            to_run: String,
            to_seq: i64,
        ),
        /// Returns `seq, id` of a run's events whose id is not `${run_id}:${seq}` (legacy ids).
        legacy_event_ids: LegacyEventIds(run_id: String),
        /// Returns `run_id, seq, timestamp` of the newest event with `runs` and `events` counts;
        /// no row without events.
        recovery_point: RecoveryPoint(),
        /// Returns `run_id` of runs in id order, for paging.
        executions_page: ExecutionsPage(after: String, limit: i64),
        /// Returns at most `limit` runs with an id before `before`, newest first, of
        /// `workflow` and `owner` where those are not NULL: `run_id, workflow_id,
        /// workflow_version, status, current_node_id, revision, owner, created_at, updated_at`.
        runs_page_all: RunsPageAll(
            workflow: Option<String>,
            owner: Option<String>,
            before: String,
            limit: i64,
        ),
        /// As `runs_page_all`, of one `status` (read from the `(status, run_id)` index).
        runs_page_status: RunsPageStatus(
            status: String,
            workflow: Option<String>,
            owner: Option<String>,
            before: String,
            limit: i64,
        ),
        /// Returns `n`: how many runs have `status`, stopping at `cap` (ordered as the
        /// `(status, run_id)` index, so even a generic plan reads only that).
        runs_count_status: RunsCountStatus(status: String, cap: i64),
        /// Returns `runs, run_revisions, events, pending, sessions, session_revisions`: counts and
        /// revision sums that any write to the workflow tables changes.
        fingerprint: Fingerprint(),
        /// Returns `id` of every Session.
        sessions_all: SessionsAll(),
        /// Delete a Session (verification probes only).
        session_delete: SessionDelete(id: String),
        /// Delete an execution, cascading to its events, commands and lease.
        execution_delete: ExecutionDelete(run_id: String),
        /// Returns `events, commands`: how many of each the run has.
        run_counts: RunCounts(run_id: String),
        /// Delete the dispatch rows of a run's commands.
        dispatch_delete_for_run: DispatchDeleteForRun(run_id: String),
        /// Unbind the Sessions bound to a run; their revision moves on.
        sessions_unbind_run: SessionsUnbindRun(run_id: String, now: DateTime<Utc>),
        /// Give an ownerless run an owner (changing no other column).
        execution_adopt: ExecutionAdopt(run_id: String, owner: String),
        /// Give an ownerless Session an owner; its revision moves on.
        session_adopt: SessionAdopt(id: String, owner: String, now: DateTime<Utc>),
        /// Returns `run_id` of at most `limit` runs of `workflow_id` that finished (a terminal
        /// status) and last changed before `before`, oldest first.
        executions_finished: ExecutionsFinished(
            workflow_id: String,
            before: DateTime<Utc>,
            limit: i64,
        ),
        /// Returns `id` of at most `limit` Sessions last changed before `before` whose bound run is
        /// of `workflow_id` and finished, oldest first.
        sessions_idle_of_workflow: SessionsIdleOfWorkflow(
            workflow_id: String,
            before: DateTime<Utc>,
            limit: i64,
        ),
        /// Returns `id` of at most `limit` Sessions bound to no run and last changed before
        /// `before`, oldest first.
        sessions_idle_unbound: SessionsIdleUnbound(before: DateTime<Utc>, limit: i64),
        /// Returns every command of a run: `id, seq, node_id, type, payload, status, idempotency_key,
        /// created_at, processed_at`, in `seq` order.
        commands_of_run: CommandsOfRun(run_id: String),
        /// A command as exported.
        command_import: CommandImport(
            id: Option<String>,
            run_id: String,
            seq: i64,
            node_id: Option<String>,
            command_type: Option<String>,
            payload: serde_json::Value,
            status: Option<String>,
            idempotency_key: Option<String>,
            created_at: Option<DateTime<Utc>>,
            processed_at: Option<DateTime<Utc>>,
        ),
        /// Returns every column of a Session.
        session_export: SessionExport(id: String),
        /// A Session as exported.
        session_import: SessionImport(
            id: String,
            user_id: String,
            context: serde_json::Value,
            active_run_id: Option<String>,
            revision: i64,
            context_revision: i64,
            created_at: DateTime<Utc>,
            updated_at: DateTime<Utc>,
            owner: Option<String>,
        ),
    }
}
