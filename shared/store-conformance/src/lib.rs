//! `jadpo-store-conformance`: the one suite every store adapter must pass.
//!
//! An adapter's tests call [`conformance_tests!`] with an expression that yields a [`Fixture`]
//! on a fresh, empty database; the macro expands to one `#[tokio::test]` per case, so a failure
//! names the case. The cases check the migrations (empty database, re-apply, ledgers, edited
//! migrations, application migrations, a failing migration), the workflow store's physical
//! schema against the specification ([`spec`]), every `jadpo_*` table's physical shape against
//! its recorded reference ([`system_tables`]), where each is created ([`placement_cases`]), `jadpo check`'s findings on drifted
//! databases ([`check_cases`]), kept values read by their encoding ([`encoding_cases`]), stored
//! files' reference counts ([`file_cases`]), keyed state ([`state_cases`]), the
//! transaction seam, and each role's behaviour.
//! A change to a port extends it.

pub mod cases;
pub mod check_cases;
pub mod encoding_cases;
pub mod file_cases;
pub mod history_cases;
pub mod operator_cases;
pub mod pipeline_cases;
pub mod placement_cases;
pub mod schedule_cases;
pub mod shape_cases;
pub mod sign_in_cases;
pub mod spec;
pub mod state_cases;
pub mod step_cases;
pub mod system_tables;
pub mod workflow_cases;

use std::sync::Arc;

use jadpo_core::{Dialect, Store};

/// A fresh database for one case, and a way to open stores on it.
pub trait Fixture: Send + Sync {
    /// The adapter's dialect.
    fn dialect(&self) -> Dialect;

    /// A new store handle (its own connection or pool) on the fixture's database.
    fn open(&self) -> Arc<dyn Store>;
}

/// Expands to one test per conformance case; `$fixture` is an expression of a future yielding a
/// [`Fixture`] on an empty database.
#[macro_export]
macro_rules! conformance_tests {
    ($fixture:expr) => {
        $crate::conformance_tests!(@cases $fixture;
            migrations_on_an_empty_database,
            reapplying_is_a_no_op,
            ledgers_record_every_migration,
            status_lists_pending_then_applied,
            a_spec_only_ledger_is_unverified_then_adopted,
            a_pre_ledger_database_is_taken_over_with_its_rows,
            an_edited_migration_is_refused_and_nothing_runs,
            application_migrations_follow_the_builtins,
            a_failing_migration_rolls_back_alone,
            concurrent_applies_apply_once,
            workflow_schema_matches_the_spec,
            ledger_tables_have_the_specs_shape,
            commit_makes_writes_visible,
            rollback_discards_writes,
            dropping_a_transaction_rolls_back,
            action_writes_and_runtime_rows_commit_together,
            values_round_trip,
            a_file_round_trips_in_its_documented_column,
            unique_violation_is_a_conflict,
            foreign_key_violation_is_a_constraint_error,
            bad_sql_is_invalid_and_the_store_stays_usable,
            deleting_an_execution_cascades,
        );
        $crate::conformance_tests!(@history $fixture;
            history_and_trail_are_append_only,
        );
        $crate::conformance_tests!(@shape $fixture;
            system_tables_have_their_recorded_shape,
        );
        $crate::conformance_tests!(@placement $fixture;
            the_warehouse_gets_only_its_tables,
            the_main_store_gets_every_feature_it_holds,
            a_feature_placed_later_gets_its_tables,
            a_database_made_whole_keeps_every_table,
            unplaced_tables_are_dropped_only_deliberately,
            a_ledger_older_than_features_gains_the_column,
        );
        $crate::conformance_tests!(@encoding $fixture;
            each_kept_value_is_read_by_its_encoding,
            migration_18_renumbers_what_earlier_releases_wrote,
        );
        $crate::conformance_tests!(@files $fixture;
            file_counts_follow_every_change,
            the_first_install_counts_existing_rows,
            unheld_files_are_claimed_only_after_their_grace,
            a_reference_racing_a_claim_keeps_the_bytes,
            uploads_record_their_uploader_within_a_quota,
        );
        $crate::conformance_tests!(@check $fixture;
            drift_by_hand_is_found_by_kind,
            a_database_behind_its_migrations_is_out_of_date,
            a_snapshot_is_checked_against_the_migrations,
            a_snapshot_round_trips_through_its_file,
            a_file_field_without_its_trigger_is_a_finding,
        );
        $crate::conformance_tests!(@engine $fixture;
            outbox_rows_and_deliveries_commit_with_the_transaction,
            claiming_due_deliveries_takes_each_once,
            only_due_deliveries_are_claimed,
            outcomes_are_recorded_once,
            a_handled_record_is_inserted_once,
            idempotency_keys_are_claimed_once_and_expire,
            concurrent_claims_are_disjoint,
            service_keys_are_stored_as_verifiers,
            a_key_is_read_with_its_services_record,
            user_tokens_are_stored_as_verifiers,
            leases_fence_a_holder_paused_past_expiry,
        );
        $crate::conformance_tests!(@state $fixture;
            keyed_state_has_one_claimer_among_twenty,
            a_lost_or_stale_claim_writes_nothing,
            keyed_state_commits_with_the_outbox,
            a_webhook_key_is_received_once_among_twenty,
        );
        $crate::conformance_tests!(@sign_in $fixture;
            sign_in_requests_are_one_time_and_limited,
            sign_in_sources_count_within_their_hour,
            browser_sessions_keep_verifiers_and_end,
            a_session_is_read_with_its_users_record,
            passkey_ceremonies_are_taken_once_and_expire,
            a_passkey_is_read_with_its_users_record,
        );
        $crate::conformance_tests!(@schedule $fixture;
            two_ticks_at_once_record_one_run,
            a_paused_tick_is_fenced_out,
            missed_ticks_record_one_run_and_skipped_rows,
            overlapping_ticks_are_skipped,
            operator_actions_are_recorded,
            removed_schedules_stop,
            housekeeping_deletes_only_what_retention_allows,
            a_second_housekeeper_waits,
        );
        $crate::conformance_tests!(@steps $fixture;
            a_run_has_one_runner_and_a_lost_one_records_nothing,
            steps_are_recorded_sent_then_answered,
            an_answer_commits_with_the_next_step_sent,
            the_last_answer_commits_with_the_runs_finish,
            a_run_finishes_with_its_transaction_and_a_diverged_one_stays_stopped,
            an_unfinished_run_raises_one_alert,
            a_run_taken_with_its_first_step_commits_or_rolls_back_with_it,
        );
        $crate::conformance_tests!(@operator $fixture;
            delivery_operations_are_recorded_and_refused_when_final,
            delivery_pages_are_read_by_keyset_and_counts_are_capped,
            breakers_let_one_probe_through_and_release_held_deliveries_once,
            flag_changes_are_recorded_with_who_made_them,
            audit_rows_record_raw_sql_changes_and_replay,
        );
        $crate::conformance_tests!(@workflow $fixture;
            a_started_run_reads_back_exactly,
            a_stale_revision_is_refused_and_exposes_nothing,
            a_command_is_acknowledged_once,
            concurrent_writers_on_one_run_have_one_winner,
            sessions_bind_starts_and_refuse_wrong_owner_or_stale_revision,
            two_starts_in_one_session_have_one_winner,
            stored_events_replay_to_the_stored_state,
            a_repeat_s_loop_state_survives_the_store,
            leases_have_one_holder_and_fence_writes,
            sessions_follow_the_spec,
            runs_are_paged_by_keyset_and_counted_by_status,
        );
    };
    (@encoding $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::encoding_cases::$case(&fixture).await;
            }
        )*
    };
    (@files $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::file_cases::$case(&fixture).await;
            }
        )*
    };
    (@check $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::check_cases::$case(&fixture).await;
            }
        )*
    };
    (@placement $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::placement_cases::$case(&fixture).await;
            }
        )*
    };
    (@history $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::history_cases::$case(&fixture).await;
            }
        )*
    };
    (@shape $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::shape_cases::$case(&fixture).await;
            }
        )*
    };
    (@workflow $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::workflow_cases::$case(&fixture).await;
            }
        )*
    };
    (@steps $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::step_cases::$case(&fixture).await;
            }
        )*
    };
    (@operator $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::operator_cases::$case(&fixture).await;
            }
        )*
    };
    (@schedule $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::schedule_cases::$case(&fixture).await;
            }
        )*
    };
    (@engine $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::pipeline_cases::$case(&fixture).await;
            }
        )*
    };
    (@state $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::state_cases::$case(&fixture).await;
            }
        )*
    };
    (@sign_in $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::sign_in_cases::$case(&fixture).await;
            }
        )*
    };
    (@cases $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture.await;
                $crate::cases::$case(&fixture).await;
            }
        )*
    };
}
