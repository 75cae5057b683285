-- The shop's orders, in store main (SQLite: after the workflow store's v1–v3).
CREATE TABLE shop_orders (
    id         TEXT PRIMARY KEY NOT NULL,
    customer   TEXT NOT NULL,
    items      TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
