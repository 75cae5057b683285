-- Stock reservations, in store warehouse (SQLite: after the workflow store's v1–v3).
CREATE TABLE shop_reservations (
    order_id    TEXT NOT NULL,
    sku         TEXT NOT NULL,
    qty         INTEGER NOT NULL CHECK (qty > 0),
    reserved_at INTEGER NOT NULL,
    PRIMARY KEY (order_id, sku)
);
