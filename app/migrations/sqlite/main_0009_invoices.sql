-- An order's invoice: a file (Jadpo's File value as JSON text), attached by its customer or a
-- service; the index finds the order holding a file when it is downloaded.
ALTER TABLE shop_orders ADD COLUMN invoice TEXT CHECK (invoice IS NULL OR json_valid(invoice));
CREATE INDEX shop_orders_invoice_idx ON shop_orders (json_extract(invoice, '$.id'));
