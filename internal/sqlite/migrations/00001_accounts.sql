-- The account schema. Kept portable on purpose: the PostgreSQL store
-- mirrors it in its own migrations directory with these substitutions:
--   INTEGER PRIMARY KEY AUTOINCREMENT -> BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY
--   BLOB                              -> BYTEA
--   TEXT times                        -> TIMESTAMPTZ
-- Times are stored here as fixed-width UTC text with microseconds
-- ("2006-01-02T15:04:05.000000Z"): they sort as text, read well in the
-- sqlite3 shell, and have PostgreSQL's precision.

-- +goose Up
CREATE TABLE accounts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT    NOT NULL,
    tier         TEXT    NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
    custom_limit BIGINT  NOT NULL DEFAULT 0 CHECK (custom_limit >= 0),
    credits      BIGINT  NOT NULL DEFAULT 0 CHECK (credits >= 0),
    created_at   TEXT    NOT NULL
);

-- Only the SHA-256 of a secret is kept. id is the public part of the key.
CREATE TABLE api_keys (
    id         TEXT   PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    hash       BLOB   NOT NULL,
    created_at TEXT   NOT NULL,
    revoked_at TEXT
);
CREATE INDEX api_keys_account ON api_keys (account_id);

-- Queries charged per key and calendar month (period "2006-01", UTC). A
-- new month starts from no row, that is from zero.
CREATE TABLE key_usage (
    key_id TEXT   NOT NULL REFERENCES api_keys (id),
    period TEXT   NOT NULL,
    used   BIGINT NOT NULL CHECK (used >= 0),
    PRIMARY KEY (key_id, period)
);

-- Every change of a balance, with the balance after it. Usage entries
-- name the key and the number of queries they charge.
CREATE TABLE ledger (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    delta      BIGINT  NOT NULL,
    balance    BIGINT  NOT NULL CHECK (balance >= 0),
    reason     TEXT    NOT NULL,
    key_id     TEXT    REFERENCES api_keys (id),
    queries    BIGINT  NOT NULL DEFAULT 0,
    created_at TEXT    NOT NULL
);
CREATE INDEX ledger_account ON ledger (account_id, id);

-- +goose Down
DROP TABLE ledger;
DROP TABLE key_usage;
DROP TABLE api_keys;
DROP TABLE accounts;
