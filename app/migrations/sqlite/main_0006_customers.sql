-- The shop's customers, the people who sign in (store main, SQLite): the user entity. A first
-- sign-in by email creates one (id and email); email is unique, lower-cased by the runtime.
CREATE TABLE shop_customers (
    id    TEXT PRIMARY KEY NOT NULL,
    email TEXT NOT NULL UNIQUE,
    name  TEXT
);
