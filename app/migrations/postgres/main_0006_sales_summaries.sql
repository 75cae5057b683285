-- The shop's sales summaries, one per run of the `sales_summary` schedule (store main, PostgreSQL).
CREATE TABLE shop_sales_summaries (
    run_id      TEXT PRIMARY KEY,
    tick_at     TIMESTAMPTZ NOT NULL,
    orders      BIGINT NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL
);
