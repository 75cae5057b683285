//! `WorkflowSql`: the slots of the workflow role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for the workflow tables.
    pub struct WorkflowSql {
        /// Returns `revision`, locking the row where the dialect can (a transition's guarded
        /// update reads it only to say what the revision was when the guard refused).
        execution_lock(run_id),
        /// Returns the execution's row.
        execution_get(run_id),
        /// Returns `owner` of the run.
        execution_owner(run_id),
        /// One event of a run's log.
        event_insert(id, run_id, seq, event_type, payload, timestamp, actor),
        /// A transition's events in one statement: `events` is a JSON array of
        /// `{id, seq, type, payload, timestamp}`, in order.
        events_insert(run_id, actor, events),
        /// Returns `seq` and `actor` of a run's events that have an actor.
        event_actors(run_id),
        /// Returns events in `seq` order: `seq, type, payload, timestamp`.
        events_list(run_id),
        /// Returns at most `limit` events after `after_seq` in `seq` order: `seq, type, payload,
        /// timestamp, actor`.
        events_page(run_id, after_seq, limit),
        /// One new command, pending.
        command_insert(id, run_id, seq, node_id, command_type, payload, idempotency_key, created_at),
        /// On a pending (or `claimed`) command.
        command_ack(id, status, processed_at),
        /// Returns `user_id, revision`, locking the row where the dialect can.
        session_lock(session_id),
        /// Bind the Session to the run, if its revision is still the expected one.
        session_bind(session_id, run_id, now, expected_revision),
        /// A new Session; `owner` may be NULL.
        session_insert(id, user_id, context, now, owner),
        /// Returns the Session row.
        session_get(id),
        /// Replace the context.
        session_update_context(id, user_id, context, now, expected_revision, context_changed),
        /// Returns `lease_id` when acquired (free or expired), no row when another holder's lease is
        /// live.
        run_lease_take(run_id, worker_id, lease_id, expires_at, now),
        /// Extend a live lease.
        run_lease_extend(run_id, lease_id, expires_at, now),
        /// Release.
        run_lease_give_up(run_id, lease_id),
        /// Returns a row while that lease is live, locking it where the dialect can.
        run_lease_fence(run_id, lease_id, now),
        /// Ends that lease if it is live, returning a row when it was.
        run_lease_end(run_id, lease_id, now),
        /// Renews that lease to `expires_at` if it is live, returning a row when it was.
        run_lease_renew(run_id, lease_id, now, expires_at),
        /// Returns `run_id` of running or cancelling runs with no live lease.
        runnable(now, limit),
        /// Returns `run_id, worker_id, lease_id, expires_at` of leases expired at `now`, oldest
        /// first.
        leases_expired(now, limit),
        /// Delete that lease if it is still expired at `now`.
        lease_clear_expired(run_id, lease_id, now),
        /// Returns `command_id` of the run's pending (and `claimed`) commands, stamped as enqueued at `now`.
        commands_resend_for_run(run_id, now),
        /// Returns a command row: `id, run_id, node_id, type, payload, status, idempotency_key`.
        command_get(id),
        /// Returns `command_id` of pending (and `claimed`) commands of live runs never put on the queue or put there
        /// before `lost_before`, stamped as enqueued at `now`.
        commands_claim_due(now, lost_before, limit),
        /// Stamp a command as put on the queue (insert or refresh).
        command_mark_enqueued(command_id, run_id, now),
        /// Returns `run_id, revision, last_seq` of runs whose events all have `${run_id}:${seq}`
        /// ids and whose revision differs from their last event's seq.
        verify_revisions(),
        /// Returns `pairs`: `(run_id, seq)` pairs that repeat, and `ids`: event ids that repeat.
        verify_event_ids(),
        /// Returns `run_id, seq` of the `limit` events after `(after_run, after_seq)`, in order.
        events_page_end(after_run, after_seq, limit),
        /// Rewrite events in `((from_run, from_seq), (to_run, to_seq)]` whose payload is not the
        /// complete serialized event into it.
        events_upgrade_range(from_run, from_seq, to_run, to_seq),
        /// Returns `seq, id` of a run's events whose id is not `${run_id}:${seq}` (legacy ids).
        legacy_event_ids(run_id),
        /// Returns `run_id, seq, timestamp` of the newest event with `runs` and `events` counts;
        /// no row without events.
        recovery_point(),
        /// Returns `run_id` of runs in id order, for paging.
        executions_page(after, limit),
        /// Returns at most `limit` runs with an id before `before`, newest first, of
        /// `workflow` and `owner` where those are not NULL: `run_id, workflow_id,
        /// workflow_version, status, current_node_id, revision, owner, created_at, updated_at`.
        runs_page_all(workflow, owner, before, limit),
        /// As `runs_page_all`, of one `status` (read from the `(status, run_id)` index).
        runs_page_status(status, workflow, owner, before, limit),
        /// Returns `n`: how many runs have `status`, stopping at `cap` (ordered as the
        /// `(status, run_id)` index, so even a generic plan reads only that).
        runs_count_status(status, cap),
        /// Returns `runs, run_revisions, events, pending, sessions, session_revisions`: counts and
        /// revision sums that any write to the workflow tables changes.
        fingerprint(),
        /// Returns `id` of every Session.
        sessions_all(),
        /// Delete a Session (verification probes only).
        session_delete(id),
        /// Delete an execution, cascading to its events, commands and lease.
        execution_delete(run_id),
        /// Returns `events, commands`: how many of each the run has.
        run_counts(run_id),
        /// Delete the dispatch rows of a run's commands.
        dispatch_delete_for_run(run_id),
        /// Unbind the Sessions bound to a run; their revision moves on.
        sessions_unbind_run(run_id, now),
        /// Give an ownerless run an owner (changing no other column).
        execution_adopt(run_id, owner),
        /// Give an ownerless Session an owner; its revision moves on.
        session_adopt(id, owner, now),
        /// Returns `run_id` of at most `limit` runs of `workflow_id` that finished (a terminal
        /// status) and last changed before `before`, oldest first.
        executions_finished(workflow_id, before, limit),
        /// Returns `id` of at most `limit` Sessions last changed before `before` whose bound run is
        /// of `workflow_id` and finished, oldest first.
        sessions_idle_of_workflow(workflow_id, before, limit),
        /// Returns `id` of at most `limit` Sessions bound to no run and last changed before
        /// `before`, oldest first.
        sessions_idle_unbound(before, limit),
        /// Returns every command of a run: `id, seq, node_id, type, payload, status, idempotency_key,
        /// created_at, processed_at`, in `seq` order.
        commands_of_run(run_id),
        /// A command as exported.
        command_import(id, run_id, seq, node_id, command_type, payload, status, idempotency_key, created_at, processed_at),
        /// Returns every column of a Session.
        session_export(id),
        /// A Session as exported.
        session_import(id, user_id, context, active_run_id, revision, context_revision, created_at, updated_at, owner),
    }
}
