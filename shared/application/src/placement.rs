//! Where each of the runtime's own tables belongs, by the rules the declaration implies: which
//! store holds it and which feature put it there. The manifest lists these as its
//! `system_table` nodes.
//!
//! The rules:
//! * the tables that commit with an action's writes, its idempotency record and the operators'
//!   log beside them, with the built-in services' keyed state, which commits with the events it
//!   emits ([`Feature::Pipeline`]), and the housekeeping lease ([`Feature::Housekeeping`])
//!   go in every store, since every declared store holds the application's entities;
//! * service keys ([`Feature::ServiceKeys`]) where the service entity lives (else the default
//!   store); sessions, passkeys and sign-in requests and links ([`Feature::SignIn`]) only where
//!   the user entity lives, and only when one is declared: sign-in reads a credential with its
//!   owner's record in one statement;
//! * the audit trail ([`Feature::Audit`]) in each store holding an audited entity;
//! * schedule state ([`Feature::Schedules`]) in the schedules' store, and flags
//!   ([`Feature::Flags`]) in the flags' store, each only when one is declared (with several
//!   stores, building the application requires that store to be named);
//! * step records ([`Feature::StepRecords`]) in the store of each action and subscriber that
//!   may make calls (a subscriber declared with a connection, or a handler declared to call one:
//!   `ApplicationBuilder::calls`), where its calls are recorded; a store no calling handler
//!   writes keeps none;
//! * workflow command dispatch ([`Feature::Workflows`]) in each store holding workflow runs;
//! * the count of fields holding each file ([`Feature::Files`]) in each store with a declared
//!   file field, where its trigger keeps it;
//! * webhook receipts ([`Feature::Webhooks`]) in the store of each action a declared webhook
//!   source feeds: the receipt commits with the action's writes and events.
//!
//! `jadpo_migrations`, the migration ledger, is the runtime's own and placed by no rule.

use super::Application;
pub use jadpo_schema::placement::{Feature, SQLITE_ONLY};

/// A system table placed in a store by a feature.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Placed {
    /// The store.
    pub store: String,
    /// The table.
    pub table: &'static str,
    /// What put it there.
    pub feature: Feature,
}

impl Application {
    /// The stores in which `feature` keeps its tables, by the rules above.
    pub fn feature_stores(&self, feature: Feature) -> Vec<&str> {
        let mut stores: Vec<&str> = match feature {
            Feature::Pipeline | Feature::Housekeeping => {
                self.stores().iter().map(String::as_str).collect()
            }
            Feature::ServiceKeys => vec![self.services_store()],
            Feature::SignIn => self.users().map(|u| u.store.as_str()).into_iter().collect(),
            Feature::Audit => self.audited().iter().map(|a| a.store.as_str()).collect(),
            Feature::Schedules => {
                let declared = self.schedules().next().is_some();
                declared.then(|| self.schedule_store()).into_iter().collect()
            }
            Feature::Flags => {
                let declared = self.flags().next().is_some();
                declared.then(|| self.flags_store()).into_iter().collect()
            }
            // Only a handler that may call records calls, in its own store.
            Feature::StepRecords => {
                let actions = self.actions.values().filter(|a| self.declares_calls(&a.name));
                let subscribers =
                    self.subscribers.values().filter(|s| self.declares_calls(&s.name));
                let stores = actions.map(|a| a.store.as_str());
                stores.chain(subscribers.map(|s| s.store.as_str())).collect()
            }
            Feature::Workflows => self.workflow_stores(),
            Feature::Files => self.file_fields.iter().map(|f| f.store.as_str()).collect(),
            Feature::Webhooks => {
                let fed = self.webhooks.values().filter_map(|w| self.actions.get(&w.action));
                fed.map(|a| a.store.as_str()).collect()
            }
        };
        stores.sort_unstable();
        stores.dedup();
        stores
    }

    /// The features whose tables `store` holds.
    pub fn store_features(&self, store: &str) -> std::collections::BTreeSet<Feature> {
        Feature::ALL.into_iter().filter(|f| self.feature_stores(*f).contains(&store)).collect()
    }

    /// The system tables `store` holds on `dialect`: those the declaration places there, with
    /// the dialect's helpers of its features (SQLite's audit context).
    pub fn placed_tables(
        &self,
        store: &str,
        dialect: jadpo_core::sql::Dialect,
    ) -> Vec<&'static str> {
        let features = self.store_features(store);
        let helpers = SQLITE_ONLY
            .iter()
            .filter(|(_, f)| dialect == jadpo_core::sql::Dialect::Sqlite && features.contains(f))
            .map(|(t, _)| *t);
        let placed = self.system_tables().into_iter().filter(|p| p.store == store);
        placed.map(|p| p.table).chain(helpers).collect()
    }

    /// Every system table the declaration needs, with its store and the feature that placed it,
    /// by store and table.
    pub fn system_tables(&self) -> Vec<Placed> {
        let mut placed: Vec<Placed> = Feature::ALL
            .into_iter()
            .flat_map(|feature| {
                let stores = self.feature_stores(feature);
                stores.into_iter().flat_map(move |store| {
                    feature.tables().iter().map(move |table| Placed {
                        store: store.to_owned(),
                        table,
                        feature,
                    })
                })
            })
            .collect();
        placed.sort();
        placed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryPolicy;
    use jadpo_core::model::flags::Rollout;
    use jadpo_schedule::Schedule;

    struct Nothing;

    #[async_trait::async_trait]
    impl crate::Subscriber for Nothing {
        async fn handle(
            &self,
            _: &mut crate::HandlerContext<'_>,
            _: &crate::Event,
        ) -> Result<(), crate::HandlerError> {
            Ok(())
        }
    }

    fn tables_in<'a>(placed: &'a [Placed], store: &str) -> Vec<&'a str> {
        placed.iter().filter(|p| p.store == store).map(|p| p.table).collect()
    }

    #[test]
    fn one_store_without_features_holds_the_pipeline_housekeeping_and_service_keys() {
        let app = Application::builder("a").store("main").build().unwrap_or_else(|e| panic!("{e}"));
        let placed = app.system_tables();
        let mut expected: Vec<&str> =
            [Feature::Pipeline, Feature::Housekeeping, Feature::ServiceKeys]
                .iter()
                .flat_map(|f| f.tables().iter().copied())
                .collect();
        expected.sort_unstable();
        assert_eq!(tables_in(&placed, "main"), expected);
    }

    #[test]
    fn each_feature_goes_only_where_the_declaration_puts_it() {
        let app = Application::builder("a")
            .store("main")
            .store("warehouse")
            .event("tick")
            .connection("mailer")
            .schedule(Schedule::every("t", std::time::Duration::from_secs(60), "tick"))
            .schedules_store("warehouse")
            .flag("f", Rollout::Off)
            .flags_store("main")
            .subscriber_via("s", "tick", "warehouse", RetryPolicy::default(), "mailer", Nothing)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let placed = app.system_tables();
        let feature_of = |table: &str| placed.iter().find(|p| p.table == table).map(|p| p.feature);
        let stores_of = |table: &str| {
            placed.iter().filter(|p| p.table == table).map(|p| p.store.as_str()).collect::<Vec<_>>()
        };
        assert_eq!(stores_of("jadpo_outbox"), ["main", "warehouse"]);
        assert_eq!(stores_of("jadpo_housekeeping"), ["main", "warehouse"]);
        assert_eq!(stores_of("jadpo_schedules"), ["warehouse"]);
        assert_eq!(stores_of("jadpo_flags"), ["main"]);
        assert_eq!(stores_of("jadpo_steps"), ["warehouse"]);
        assert_eq!(stores_of("jadpo_service_keys"), ["main"]);
        assert!(stores_of("jadpo_sessions").is_empty(), "no users, no sessions");
        assert!(stores_of("jadpo_audit").is_empty(), "nothing audited");
        assert!(stores_of("jadpo_command_dispatch").is_empty(), "no workflows");
        assert_eq!(feature_of("jadpo_schedule_runs"), Some(Feature::Schedules));
        assert!(placed.iter().all(|p| p.table != "jadpo_migrations"), "the ledger is placed");
    }

    struct Quiet;

    #[async_trait::async_trait]
    impl crate::Action for Quiet {
        async fn run(
            &self,
            _ctx: &mut crate::HandlerContext<'_>,
            _input: serde_json::Value,
        ) -> Result<crate::ActionOutput, crate::HandlerError> {
            Ok(crate::ActionOutput::ok(serde_json::json!({})))
        }
    }

    #[test]
    fn step_records_go_only_where_a_handler_is_declared_to_call() {
        let base = || Application::builder("a").store("main").store("side").connection("mailer");
        let app = base()
            .action("quiet", "main", Quiet)
            .action("caller", "side", Quiet)
            .calls("caller", &["mailer"])
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(app.feature_stores(Feature::StepRecords), ["side"]);
        assert!(app.declares_calls("caller") && !app.declares_calls("quiet"));
        let none = base().action("quiet", "main", Quiet).build().unwrap_or_else(|e| panic!("{e}"));
        assert!(none.feature_stores(Feature::StepRecords).is_empty(), "a connection alone");
        let unknown = base().action("quiet", "main", Quiet).calls("nobody", &["mailer"]).build();
        assert!(matches!(unknown, Err(crate::AppError::UnknownHandler(_))), "{unknown:?}");
        let undeclared = base().action("quiet", "main", Quiet).calls("quiet", &["sms"]).build();
        assert!(
            matches!(undeclared, Err(crate::AppError::UnknownConnection { .. })),
            "{undeclared:?}"
        );
    }
}
