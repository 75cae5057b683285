//! Feature flags read by actions and subscribers through the runtime: one value per
//! transaction even when an operator changes the flag meanwhile, and the shop's receipt survey
//! following its flag.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use jadpo_application::{Action, ActionOutput, Application, HandlerContext, HandlerError};
use jadpo_core::Store;
use jadpo_core::model::flags::Rollout;
use jadpo_engine::EngineSettings;
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::operate::Operator;
use jadpo_engine::operate::flags::FlagOps;
use jadpo_test_env::{Env, Kind, commit_and_enqueue, request};
use serde_json::{Value, json};

/// Reads `beta`, turns it on from another connection, reads it again.
struct Peek(Arc<OnceLock<Arc<dyn Store>>>);

#[async_trait]
impl Action for Peek {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        _: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let first = ctx.flag("beta", "subject-1").await?;
        let flags = self.0.get().ok_or_else(|| HandlerError::Failed("no store".into()))?;
        flags
            .execute_once(
                "INSERT INTO jadpo_flags (name, mode, percentage, updated_at, updated_by) \
                 VALUES ('beta', 'on', 100, $1, 'someone') ON CONFLICT (name) DO UPDATE \
                 SET mode = 'on', percentage = 100",
                &[ctx.now().into()],
            )
            .await?;
        let second = ctx.flag("beta", "subject-1").await?;
        let undeclared = ctx.flag("gamma", "subject-1").await.is_err();
        Ok(ActionOutput::created(
            json!({"first": first, "second": second, "undeclared": undeclared}),
        ))
    }
}

async fn a_flag_reads_the_same_within_a_transaction(kind: Kind, flags_store: &str) {
    let handle = Arc::new(OnceLock::new());
    let app = Application::builder("peek")
        .store("main")
        .store("settings")
        .flag("beta", Rollout::Off)
        .flags_store(flags_store)
        .action("peek", "main", Peek(Arc::clone(&handle)))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let env = Env::new(kind, app, EngineSettings::default()).await;
    let _ = handle.set(Arc::clone(env.store(flags_store)));
    let out = commit_unsent(&env.engine, request("peek", json!({})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.body,
        json!({"first": false, "second": false, "undeclared": true}),
        "one value per transaction"
    );
    let next = commit_unsent(&env.engine, request("peek", json!({})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next.body["first"], true, "the next transaction sees the change");
}

async fn the_receipt_survey_follows_its_flag(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let place = |n: usize| {
        request(
            "place_order",
            json!({"customer": format!("c{n}"), "items": [{"sku": "A", "qty": 1}]}),
        )
    };
    let engine = env.engine.clone();
    let ops = FlagOps::new(&engine);
    let tess = Operator::new("tess").unwrap_or_else(|e| panic!("{e}"));
    for (n, state, expected) in [(0, Rollout::Off, false), (1, Rollout::On, true)] {
        ops.set("receipt_survey", state, &tess).await.unwrap_or_else(|e| panic!("{e}"));
        commit_and_enqueue(&env, place(n)).await;
        env.drain().await;
        let mailed = env.sinks.received("mailer");
        assert_eq!(mailed.last().map(|m| m["body"]["survey"].clone()), Some(json!(expected)));
    }
}

mod sqlite {
    use super::Kind::Sqlite;

    #[tokio::test]
    async fn a_flag_in_another_store_reads_the_same_within_a_transaction() {
        super::a_flag_reads_the_same_within_a_transaction(Sqlite, "settings").await;
    }

    #[tokio::test]
    async fn the_receipt_survey_follows_its_flag() {
        super::the_receipt_survey_follows_its_flag(Sqlite).await;
    }
}

mod postgres {
    use super::Kind::Postgres;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flag_in_another_store_reads_the_same_within_a_transaction() {
        super::a_flag_reads_the_same_within_a_transaction(Postgres, "settings").await;
    }

    // SQLite's single writer would make the concurrent change wait for the transaction, so
    // only PostgreSQL can change the flag in the action's own store meanwhile.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flag_in_the_same_store_reads_the_same_within_a_transaction() {
        super::a_flag_reads_the_same_within_a_transaction(Postgres, "main").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_receipt_survey_follows_its_flag() {
        super::the_receipt_survey_follows_its_flag(Postgres).await;
    }
}
