-- The shop's orders, in store main (PostgreSQL: after the workflow store's v1–v4).
CREATE TABLE shop_orders (
    id         TEXT PRIMARY KEY,
    customer   TEXT NOT NULL,
    items      JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
