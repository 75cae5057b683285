//! The runtime's features that keep tables of their own, each table's feature, and which of a
//! migration's objects (a table, its index, a function of the audit trail) belong to which
//! feature. `app::placement` decides from the declaration which features a store holds;
//! migrations read this to create in a store only the tables its features need.

/// A feature of the runtime that keeps tables of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    /// Events, their deliveries, handled records, idempotency keys, operator actions, breakers,
    /// and the built-in services' keyed state, which commits with the outbox.
    Pipeline,
    /// The housekeeping pass's lease.
    Housekeeping,
    /// Service keys.
    ServiceKeys,
    /// Users' sessions, passkeys, sign-in requests and links.
    SignIn,
    /// The audit trail.
    Audit,
    /// Schedules and their runs.
    Schedules,
    /// Feature flags and their changes.
    Flags,
    /// Records of a handler's changing calls.
    StepRecords,
    /// Workflow commands on their way to the queue.
    Workflows,
    /// How many fields hold each stored file.
    Files,
    /// Webhook receipts.
    Webhooks,
}

impl Feature {
    /// Every feature, in order.
    pub const ALL: [Self; 11] = [
        Self::Pipeline,
        Self::Housekeeping,
        Self::ServiceKeys,
        Self::SignIn,
        Self::Audit,
        Self::Schedules,
        Self::Flags,
        Self::StepRecords,
        Self::Workflows,
        Self::Files,
        Self::Webhooks,
    ];

    /// Its name, as the manifest gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pipeline => "pipeline",
            Self::Housekeeping => "housekeeping",
            Self::ServiceKeys => "service_keys",
            Self::SignIn => "sign_in",
            Self::Audit => "audit",
            Self::Schedules => "schedules",
            Self::Flags => "flags",
            Self::StepRecords => "step_records",
            Self::Workflows => "workflows",
            Self::Files => "files",
            Self::Webhooks => "webhooks",
        }
    }

    /// The tables it keeps.
    pub fn tables(self) -> &'static [&'static str] {
        match self {
            Self::Pipeline => &[
                "jadpo_outbox",
                "jadpo_deliveries",
                "jadpo_handled_deliveries",
                "jadpo_idempotency_keys",
                "jadpo_operator_actions",
                "jadpo_circuit_breakers",
                "jadpo_keyed_state",
            ],
            Self::Housekeeping => &["jadpo_housekeeping"],
            Self::ServiceKeys => &["jadpo_service_keys"],
            Self::SignIn => &[
                "jadpo_sessions",
                "jadpo_passkeys",
                "jadpo_passkey_challenges",
                "jadpo_sign_in_requests",
                "jadpo_sign_in_links",
                "jadpo_used_tokens",
                "jadpo_sign_in_sources",
            ],
            Self::Audit => &["jadpo_audit"],
            Self::Schedules => &["jadpo_schedules", "jadpo_schedule_runs"],
            Self::Flags => &["jadpo_flags", "jadpo_flag_changes"],
            Self::StepRecords => &["jadpo_step_records", "jadpo_steps"],
            Self::Workflows => &["jadpo_command_dispatch"],
            Self::Files => &["jadpo_files"],
            Self::Webhooks => &["jadpo_webhook_receipts"],
        }
    }
}

/// Tables a feature keeps on one dialect only, as part of how it works there, not as state of
/// its own: SQLite's stand-ins for PostgreSQL's transaction-local settings and roles, which carry
/// the acting context to the audit trigger and let retention and erasure past the trail's
/// append-only guard. Placed with their feature on that dialect; the manifest,
/// which describes the declaration and no database, leaves them out.
pub const SQLITE_ONLY: &[(&str, Feature)] =
    &[("jadpo_audit_context", Feature::Audit), ("jadpo_audit_release", Feature::Audit)];

impl Feature {
    /// Parses [`Feature::as_str`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// The feature whose table is called `table` (the dialect-only helpers included).
    pub fn of_table(table: &str) -> Option<Self> {
        let helper = SQLITE_ONLY.iter().find(|(t, _)| *t == table).map(|(_, f)| *f);
        helper.or_else(|| Self::ALL.into_iter().find(|f| f.tables().contains(&table)))
    }

    /// The feature of a `jadpo_` object named after a table: the table itself, or an index,
    /// function or trigger whose name is the table's followed by `_…`
    /// (`jadpo_deliveries_due_idx`, `jadpo_audit_row`). The longest such table wins.
    pub fn of_object(name: &str) -> Option<Self> {
        let tables = Self::ALL
            .into_iter()
            .flat_map(|f| f.tables().iter().map(move |t| (*t, f)))
            .chain(SQLITE_ONLY.iter().copied());
        tables
            .filter(|(t, _)| {
                name == *t || name.strip_prefix(t).is_some_and(|rest| rest.starts_with('_'))
            })
            .max_by_key(|(t, _)| t.len())
            .map(|(_, f)| f)
    }
}

/// A set of features written as the migration ledger keeps it: names in order, comma-separated.
pub fn features_text(features: &std::collections::BTreeSet<Feature>) -> String {
    features.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(",")
}

/// Reads [`features_text`]; `None` names a feature this build does not know.
pub fn parse_features(text: &str) -> Option<std::collections::BTreeSet<Feature>> {
    text.split(',').filter(|s| !s.trim().is_empty()).map(|s| Feature::from_name(s.trim())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_belong_to_the_feature_of_the_longest_table_they_are_named_after() {
        assert_eq!(Feature::of_object("jadpo_deliveries_due_idx"), Some(Feature::Pipeline));
        assert_eq!(Feature::of_object("jadpo_audit_row"), Some(Feature::Audit));
        assert_eq!(Feature::of_object("jadpo_audit_context"), Some(Feature::Audit));
        assert_eq!(Feature::of_object("jadpo_step_records_finished"), Some(Feature::StepRecords));
        assert_eq!(Feature::of_object("jadpo_sessions_user"), Some(Feature::SignIn));
        assert_eq!(Feature::of_object("jadpo_flag_changes_flag_idx"), Some(Feature::Flags));
        assert_eq!(Feature::of_object("jadpo_files_count"), Some(Feature::Files));
        assert_eq!(Feature::of_object("jadpo_outboxes"), None, "a prefix must end at an _");
        assert_eq!(Feature::of_object("jadpo_unknown"), None);
        assert_eq!(Feature::of_table("jadpo_deliveries_due_idx"), None, "an index is no table");
    }

    #[test]
    fn feature_sets_read_back_and_unknown_names_are_refused() {
        let set = std::collections::BTreeSet::from([Feature::Flags, Feature::Pipeline]);
        let text = features_text(&set);
        assert_eq!(text, "pipeline,flags");
        assert_eq!(parse_features(&text), Some(set));
        assert_eq!(parse_features(""), Some(std::collections::BTreeSet::new()));
        assert_eq!(parse_features("pipeline,blobs"), None);
        assert!(Feature::ALL.iter().all(|f| Feature::from_name(f.as_str()) == Some(*f)));
    }
}
