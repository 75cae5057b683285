-- The shop's sales summaries, one per run of the `sales_summary` schedule (store main, SQLite).
CREATE TABLE shop_sales_summaries (
    run_id      TEXT PRIMARY KEY NOT NULL,
    tick_at     INTEGER NOT NULL,
    orders      INTEGER NOT NULL,
    computed_at INTEGER NOT NULL
);
