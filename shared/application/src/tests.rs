use async_trait::async_trait;
use serde_json::{Value, json};

use super::*;
use jadpo_schema::migrate::Ledger;

struct Noop;

#[async_trait]
impl Action for Noop {
    async fn run(
        &self,
        _: &mut HandlerContext<'_>,
        _: Value,
    ) -> Result<ActionOutput, HandlerError> {
        Ok(ActionOutput::ok(json!({})))
    }
}

#[async_trait]
impl Subscriber for Noop {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        Ok(())
    }
}

fn shop() -> ApplicationBuilder {
    Application::builder("shop")
        .store("main")
        .store("warehouse")
        .event("order.placed")
        .action("place_order", "main", Noop)
        .subscriber("reserve_stock", "order.placed", "warehouse", RetryPolicy::default(), Noop)
}

#[test]
fn a_valid_declaration_builds() {
    let m = Migration::new(Ledger::Workflow, 4, "meta", "CREATE TABLE meta (k TEXT)");
    let app = shop().migrations("main", Dialect::Sqlite, vec![m.clone()]).build();
    let app = app.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(app.default_store(), "main");
    assert_eq!(app.migrations_for("main", Dialect::Sqlite), vec![m]);
    assert!(app.migrations_for("main", Dialect::Postgres).is_empty());
    assert_eq!(app.action("place_order").map(|a| a.store.as_str()), Some("main"));
    let subs: Vec<_> = app.subscribers_of("order.placed").map(|s| s.name.as_str()).collect();
    assert_eq!(subs, vec!["reserve_stock"]);
    assert!(app.has_event("order.placed") && !app.has_event("order.shipped"));
}

#[test]
fn bad_declarations_name_what_is_wrong() {
    let err = |b: ApplicationBuilder| b.build().err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(err(Application::builder("a")), "an application declares at least one store");
    assert!(err(Application::builder("a").store("Main")).contains("store name \"Main\""));
    assert!(
        err(Application::builder("a").store("main").store("main"))
            .contains("store \"main\" is declared twice")
    );
    assert!(
        err(shop().subscriber("audit", "order.shipped", "main", RetryPolicy::default(), Noop))
            .contains(
                "subscriber \"audit\" listens to event \"order.shipped\", which is not declared"
            )
    );
    assert!(err(shop().action("refund", "billing", Noop)).contains(
        "action \"refund\" uses store \"billing\", which is not declared (stores: main, warehouse)"
    ));
    assert!(
        err(shop().action("place_order", "main", Noop))
            .contains("action \"place_order\" is declared twice")
    );
    assert!(err(shop().event("Order Placed")).contains("event name \"Order Placed\""));
    let m = Migration::new(Ledger::Workflow, 9, "x", "x");
    assert!(
        err(shop().migrations("other", Dialect::Sqlite, vec![m])).contains("uses store \"other\"")
    );
}

/// With several stores, schedules and flags must be told their store; with one, or named, they
/// build (and the refusal names the feature, the method and the stores).
#[test]
fn several_stores_need_the_store_of_schedules_and_flags_named() {
    use jadpo_core::model::flags::Rollout;
    use jadpo_schedule::Schedule;
    let every = || Schedule::every("tick", std::time::Duration::from_secs(60), "order.placed");
    let err = |b: ApplicationBuilder| b.build().err().map(|e| e.to_string()).unwrap_or_default();
    let unnamed = err(shop().schedule(every()));
    assert!(unnamed.starts_with("schedules keep their state in one store"), "{unnamed}");
    assert!(unnamed.contains(".schedules_store(\"<store>\")"), "{unnamed}");
    assert!(unnamed.ends_with("(stores: main, warehouse)"), "{unnamed}");
    let flags = err(shop().flag("f", Rollout::Off));
    assert!(flags.starts_with("flags keep") && flags.contains(".flags_store("), "{flags}");
    let named = shop().schedule(every()).schedules_store("warehouse").flag("f", Rollout::On);
    let app = named.flags_store("main").build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((app.schedule_store(), app.flags_store()), ("warehouse", "main"));
    let alone = Application::builder("a").store("main").event("order.placed").schedule(every());
    let app = alone.flag("f", Rollout::Off).build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((app.schedule_store(), app.flags_store()), ("main", "main"));
    assert!(err(shop().schedules_store("billing")).contains("uses store \"billing\""));
}

#[test]
fn webhook_sources_are_checked_and_placed_with_their_action() {
    let source = |name: &str| WebhookSource::new(name, WebhookScheme::GitHub, "place_order");
    let app = shop().webhook(source("gh")).build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        app.webhook("gh").map(|w| w.secrets_variable.as_str()),
        Some("JADPO_WEBHOOK_GH_SECRETS")
    );
    assert_eq!(app.feature_stores(Feature::Webhooks), ["main"], "the fed action's store");
    assert!(shop().build().is_ok_and(|a| a.feature_stores(Feature::Webhooks).is_empty()));
    let day = std::time::Duration::from_secs(86_400);
    let cases = [
        (shop().webhook(WebhookSource::new("gh", WebhookScheme::Slack, "nope")), "not declared"),
        (shop().webhook(source("Bad-Name")), "webhook source"),
        (shop().webhook(source("gh")).webhook(source("gh")), "declared twice"),
        (shop().webhook(source("gh").body_limit(0)), "body limit"),
        (shop().webhook(source("gh").tolerance(std::time::Duration::ZERO)), "tolerance"),
        (shop().webhook(source("gh").retention(day / 2)), "at least a day"),
        (shop().webhook(source("gh").rate(0, 1)), "its rate"),
        (shop().webhook(source("gh").rate(1, 0)), "its rate"),
        (shop().webhook(source("gh").secrets_from("lower-case")), "environment variable"),
    ];
    for (builder, expected) in cases {
        let err = builder.build().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains(expected), "{expected:?} not in {err:?}");
    }
}
