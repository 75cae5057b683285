-- The shop's services, the systems that call it with service keys (store main, SQLite): the
-- service entity. A key is issued only for, and accepted only from, a service listed here;
-- deleting a row stops its keys at once. `web` is the storefront's server, which places orders
-- for named customers; the local run adds `local` for itself.
CREATE TABLE shop_services (
    id          TEXT PRIMARY KEY NOT NULL,
    description TEXT
);
INSERT INTO shop_services (id, description) VALUES ('web', 'the storefront''s server');
