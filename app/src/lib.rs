//! `jadpo-app`: the application this deployment runs — a small shop. Users replace this crate.
//!
//! * Stores: `main` (orders; `DATABASE_URL`) and `warehouse` (reservations;
//!   `DATABASE_URL_WAREHOUSE`), so delivery across stores is exercised. Orders are audited
//!   (entity `order`): every change is in `jadpo_audit` (`jadpo audit show order ID`).
//! * Users: `customers` (`shop_customers` in `main`), who sign in by a mailed link or code (the
//!   mail goes through `mailer`); a first sign-in creates the customer.
//! * Services: `shop_services` in `main` (`web`, the storefront's server, from a migration; the
//!   local run adds `local`): service keys are issued only for services listed there.
//! * Action `place_order` (`POST /actions/place_order` with `{"items": [{"sku": "A", "qty": 1}]}`)
//!   writes an order and emits `order.placed`. A signed-in customer orders for themself; a
//!   service names the customer (`"customer": "c1"`).
//! * Subscriber `reserve_stock` writes one reservation per item in `warehouse`.
//! * Workflow `checkout` (`POST /runs`): reserve → charge through `payments` → wait for
//!   `shipment.confirmed` → complete, compensated (release, refund) on cancel.
//! * Subscriber `send_receipt` calls the `mailer` connection (locally, the sink at
//!   `POST /sink/mailer`), behind the connection's circuit breaker; the `receipt_survey` flag
//!   (off until an operator sets it, e.g. to 25% of customers) adds a survey to the receipt.
//! * Action `pay_order` (`{"order_id": "…", "amount": 1250}`, in cents) emits
//!   `order.payment_requested`; subscriber `take_payment` charges through `payments`, then mails a
//!   receipt naming the charge through `mailer`, then writes `shop_payments`. Both calls are
//!   recorded steps with their own idempotency keys: a retry replays them instead of charging
//!   twice. `payments` declares a 24-hour key window: an unanswered charge older than that is
//!   not re-sent but left to an operator.
//! * Invoices: a PDF (at most 2 MiB) uploaded to `POST /files/shop_orders/invoice?name=…` and
//!   attached to an order with action `attach_invoice` (`{"order_id", "invoice": <the file>}`);
//!   `GET /files/{id}` serves it to the order's customer and to services (`invoices`).
//! * Schedule `sales_summary` (every minute) emits `sales.summary_due`; subscriber
//!   `summarize_sales` writes one row per run to `shop_sales_summaries`.

mod checkout;
mod invoices;
mod orders;
mod payments;
mod sales;

use jadpo_application::{
    AppError, Application, Callers, FirstSignIn, RetryPolicy, ServiceEntity, UserEntity,
};
use jadpo_core::Dialect;
use jadpo_core::model::audit::AuditSpec;
use jadpo_core::model::file_field::FileField;
use jadpo_core::model::flags::Rollout;
use jadpo_schedule::Schedule;
use jadpo_schema::migrate::{Ledger, Migration};

pub use checkout::{Charge, Refund, Release, Reserve, checkout};
pub use invoices::AttachInvoice;
pub use orders::{PlaceOrder, ReserveStock, SendReceipt};
pub use payments::{PayOrder, TakePayment};
pub use sales::SummarizeSales;

fn migration(version: u32, name: &str, sql: &str) -> Vec<Migration> {
    vec![Migration::new(Ledger::Workflow, version, name, sql)]
}

fn migrations(list: &[(u32, &str, &str)]) -> Vec<Migration> {
    list.iter().map(|(v, name, sql)| Migration::new(Ledger::Workflow, *v, name, sql)).collect()
}

/// Why the shop's declaration is invalid (a bug in this crate; its tests build it).
#[derive(Debug, thiserror::Error)]
pub enum ShopError {
    /// The application's declaration.
    #[error(transparent)]
    App(#[from] AppError),
    /// A workflow's graph.
    #[error(transparent)]
    Workflow(#[from] jadpo_workflow::def::DefinitionError),
}

/// The shop's declaration.
pub fn application() -> Result<Application, ShopError> {
    Ok(Application::builder("shop")
        .store("main")
        .store("warehouse")
        // Schedule and flag state live in main (with two stores, they must be named).
        .schedules_store("main")
        .flags_store("main")
        .event("order.placed")
        .event("sales.summary_due")
        .event("order.payment_requested")
        .flag("receipt_survey", Rollout::Off)
        .audit(AuditSpec::new("order", "main", "shop_orders", &["customer", "items", "created_at"]))
        .schedule(Schedule::every(
            "sales_summary",
            std::time::Duration::from_secs(60),
            "sales.summary_due",
        ))
        .connection("mailer")
        .connection_with_key_window("payments", std::time::Duration::from_secs(24 * 3600))
        .workflow(checkout()?, "main")
        .capability("reserve", Reserve)
        .capability("release", Release)
        .capability("charge", Charge)
        .capability("refund", Refund)
        .users(
            UserEntity::new("customer", "main", "shop_customers")
                .email_sign_in("mailer")
                .on_first_sign_in(FirstSignIn::Create),
        )
        .services(ServiceEntity::new("service", "main", "shop_services"))
        .action_for("place_order", "main", Callers::users_and_services(), PlaceOrder)
        .subscriber(
            "reserve_stock",
            "order.placed",
            "warehouse",
            RetryPolicy::default(),
            ReserveStock,
        )
        .subscriber_via(
            "send_receipt",
            "order.placed",
            "main",
            RetryPolicy::default(),
            "mailer",
            SendReceipt,
        )
        .action_for("pay_order", "main", Callers::users_and_services(), PayOrder)
        .file_field(
            FileField::new("main", "shop_orders", "invoice")
                .owned_by("customer")
                .max_size(2 * 1024 * 1024)
                .content_types(&["application/pdf"]),
        )
        .action_for("attach_invoice", "main", Callers::users_and_services(), AttachInvoice)
        .subscriber_via(
            "take_payment",
            "order.payment_requested",
            "main",
            RetryPolicy::default(),
            "payments",
            TakePayment,
        )
        .subscriber(
            "summarize_sales",
            "sales.summary_due",
            "main",
            RetryPolicy::default(),
            SummarizeSales,
        )
        .migrations(
            "main",
            Dialect::Sqlite,
            migrations(&[
                (4, "shop_orders", include_str!("../migrations/sqlite/main_0004_orders.sql")),
                (
                    5,
                    "shop_sales_summaries",
                    include_str!("../migrations/sqlite/main_0005_sales_summaries.sql"),
                ),
                (6, "shop_customers", include_str!("../migrations/sqlite/main_0006_customers.sql")),
                (7, "shop_services", include_str!("../migrations/sqlite/main_0007_services.sql")),
                (8, "shop_payments", include_str!("../migrations/sqlite/main_0008_payments.sql")),
                (9, "shop_invoices", include_str!("../migrations/sqlite/main_0009_invoices.sql")),
            ]),
        )
        .migrations(
            "main",
            Dialect::Postgres,
            migrations(&[
                (5, "shop_orders", include_str!("../migrations/postgres/main_0005_orders.sql")),
                (
                    6,
                    "shop_sales_summaries",
                    include_str!("../migrations/postgres/main_0006_sales_summaries.sql"),
                ),
                (
                    7,
                    "shop_customers",
                    include_str!("../migrations/postgres/main_0007_customers.sql"),
                ),
                (8, "shop_services", include_str!("../migrations/postgres/main_0008_services.sql")),
                (9, "shop_payments", include_str!("../migrations/postgres/main_0009_payments.sql")),
                (
                    10,
                    "shop_invoices",
                    include_str!("../migrations/postgres/main_0010_invoices.sql"),
                ),
            ]),
        )
        .migrations(
            "warehouse",
            Dialect::Sqlite,
            migration(
                4,
                "shop_reservations",
                include_str!("../migrations/sqlite/warehouse_0004_reservations.sql"),
            ),
        )
        .migrations(
            "warehouse",
            Dialect::Postgres,
            migration(
                5,
                "shop_reservations",
                include_str!("../migrations/postgres/warehouse_0005_reservations.sql"),
            ),
        )
        .build()?)
}

#[cfg(test)]
mod tests {
    use jadpo_core::Dialect;

    #[test]
    fn the_shop_declares_its_stores_action_and_subscriber() {
        let app = super::application().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(app.name(), "shop");
        assert_eq!(app.stores(), ["main".to_owned(), "warehouse".to_owned()]);
        assert!(app.action("place_order").is_some());
        let subs: Vec<_> = app
            .subscribers_of("order.placed")
            .map(|s| (s.name.as_str(), s.store.as_str()))
            .collect();
        assert_eq!(subs, vec![("reserve_stock", "warehouse"), ("send_receipt", "main")]);
        assert_eq!(app.connections(), ["mailer".to_owned(), "payments".to_owned()]);
        assert!(app.workflow("checkout").is_some_and(|(_, store)| store == "main"));
        assert_eq!(app.migrations_for("warehouse", Dialect::Postgres).len(), 1);
        assert_eq!(app.migrations_for("main", Dialect::Sqlite).len(), 6);
        let invoice = app.file_field("shop_orders", "invoice");
        assert!(invoice.is_some_and(|f| f.owner_column.as_deref() == Some("customer")));
        assert!(app.action("attach_invoice").is_some());
        assert!(app.action("pay_order").is_some());
        let payers: Vec<_> =
            app.subscribers_of("order.payment_requested").map(|s| s.name.as_str()).collect();
        assert_eq!(payers, ["take_payment"]);
        assert_eq!(app.key_window("payments"), Some(std::time::Duration::from_secs(86_400)));
        assert_eq!(app.users_store(), "main");
        assert_eq!(app.services().map(|s| s.table.as_str()), Some("shop_services"));
        assert_eq!(app.services_store(), "main");
        let summary = app.schedule("sales_summary").unwrap_or_else(|| panic!("schedule"));
        assert_eq!(summary.when.describe(), "every 60s");
        assert_eq!(app.schedule_store(), "main");
    }
}
