-- The account schema, the PostgreSQL twin of the SQLite store's
-- migrations/00001_accounts.sql: the same tables, columns, constraints and
-- meanings, with these substitutions:
--   INTEGER PRIMARY KEY AUTOINCREMENT -> BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY
--   BLOB                              -> BYTEA
--   TEXT times                        -> TIMESTAMPTZ (microseconds, like the SQLite text)
-- A change to one file needs the same change in the other, under the same
-- version number, so that both stores pass one contract suite.
--
-- accounts and key_usage rows are rewritten by every charged batch; a
-- lower fillfactor leaves room on the page so those updates stay HOT
-- (no index writes, less bloat).

-- +goose Up
CREATE TABLE accounts (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         TEXT        NOT NULL,
    tier         TEXT        NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
    custom_limit BIGINT      NOT NULL DEFAULT 0 CHECK (custom_limit >= 0),
    credits      BIGINT      NOT NULL DEFAULT 0 CHECK (credits >= 0),
    created_at   TIMESTAMPTZ NOT NULL
) WITH (fillfactor = 70);

-- Only the SHA-256 of a secret is kept. id is the public part of the key.
CREATE TABLE api_keys (
    id         TEXT        PRIMARY KEY,
    account_id BIGINT      NOT NULL REFERENCES accounts (id),
    hash       BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX api_keys_account ON api_keys (account_id);

-- Queries charged per key and calendar month (period "2006-01", UTC). A
-- new month starts from no row, that is from zero.
CREATE TABLE key_usage (
    key_id TEXT   NOT NULL REFERENCES api_keys (id),
    period TEXT   NOT NULL,
    used   BIGINT NOT NULL CHECK (used >= 0),
    PRIMARY KEY (key_id, period)
) WITH (fillfactor = 70);

-- Every change of a balance, with the balance after it. Usage entries
-- name the key and the number of queries they charge.
CREATE TABLE ledger (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT      NOT NULL REFERENCES accounts (id),
    delta      BIGINT      NOT NULL,
    balance    BIGINT      NOT NULL CHECK (balance >= 0),
    reason     TEXT        NOT NULL,
    key_id     TEXT        REFERENCES api_keys (id),
    queries    BIGINT      NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX ledger_account ON ledger (account_id, id);

-- +goose Down
DROP TABLE ledger;
DROP TABLE key_usage;
DROP TABLE api_keys;
DROP TABLE accounts;
