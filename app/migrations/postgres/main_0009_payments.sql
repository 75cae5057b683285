-- The shop's payments, one per paid order: the payment provider's charge and the receipt the
-- mailer sent for it, both by the `take_payment` subscriber (store main, PostgreSQL).
CREATE TABLE shop_payments (
    order_id    TEXT PRIMARY KEY,
    amount      BIGINT NOT NULL,
    charge_id   TEXT NOT NULL,
    receipt_id  TEXT NOT NULL,
    paid_at     TIMESTAMPTZ NOT NULL
);
