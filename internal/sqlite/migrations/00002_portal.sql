-- Self-service: key labels and last use, daily usage counters, account
-- owners with their one-time links and sessions, tier requests and the
-- audit log. Mirrored by the PostgreSQL store's 00002_portal.sql with the
-- substitutions listed in 00001_accounts.sql.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN label TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;

-- Queries charged per key and UTC day ("2006-01-02"), written by the same
-- transaction as the charge they count.
CREATE TABLE key_usage_daily (
    key_id TEXT   NOT NULL REFERENCES api_keys (id),
    day    TEXT   NOT NULL,
    used   BIGINT NOT NULL CHECK (used >= 0),
    PRIMARY KEY (key_id, day)
);

-- People who sign in to an account's portal. email is lower-cased; one
-- email owns at most one account. password_hash is argon2id in PHC form,
-- '' until the invitation is accepted.
CREATE TABLE owners (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id     BIGINT  NOT NULL REFERENCES accounts (id),
    email          TEXT    NOT NULL UNIQUE,
    password_hash  TEXT    NOT NULL DEFAULT '',
    created_at     TEXT    NOT NULL,
    failed_signins BIGINT  NOT NULL DEFAULT 0,
    locked_until   TEXT
);
CREATE INDEX owners_account ON owners (account_id);

-- One-time links (invitations, password resets): only the SHA-256 of
-- the token is kept.
CREATE TABLE owner_tokens (
    hash       BLOB   PRIMARY KEY,
    owner_id   BIGINT NOT NULL REFERENCES owners (id),
    purpose    TEXT   NOT NULL CHECK (purpose IN ('invite', 'reset')),
    created_at TEXT   NOT NULL,
    expires_at TEXT   NOT NULL,
    used_at    TEXT
);
CREATE INDEX owner_tokens_owner ON owner_tokens (owner_id);

-- Signed-in browsers: the SHA-256 of the cookie's secret, a public id for
-- the audit log, and the CSRF token the page sends back. owner_id is NULL
-- for an operator's console session.
CREATE TABLE sessions (
    id           TEXT   PRIMARY KEY,
    hash         BLOB   NOT NULL UNIQUE,
    kind         TEXT   NOT NULL CHECK (kind IN ('owner', 'operator')),
    owner_id     BIGINT REFERENCES owners (id),
    csrf         TEXT   NOT NULL,
    created_at   TEXT   NOT NULL,
    last_seen_at TEXT   NOT NULL,
    expires_at   TEXT   NOT NULL,
    revoked_at   TEXT,
    CHECK ((kind = 'owner') = (owner_id IS NOT NULL))
);
CREATE INDEX sessions_owner ON sessions (owner_id);

-- Owners' requests to change tier; at most one pending per account.
CREATE TABLE tier_requests (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id    BIGINT  NOT NULL REFERENCES accounts (id),
    owner_id      BIGINT  REFERENCES owners (id),
    tier          TEXT    NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
    monthly_limit BIGINT  NOT NULL DEFAULT 0 CHECK (monthly_limit >= 0),
    note          TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'refused')),
    created_at    TEXT    NOT NULL,
    decided_at    TEXT
);
CREATE UNIQUE INDEX tier_requests_one_pending ON tier_requests (account_id) WHERE status = 'pending';

-- Every change made through the service: what, to which account, when and
-- by whom ("session:<id>", "token", "owner:<id>/session:<id>", "cli").
CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    account_id BIGINT,
    target     TEXT    NOT NULL DEFAULT '',
    detail     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_account ON audit_log (account_id, id);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE tier_requests;
DROP TABLE sessions;
DROP TABLE owner_tokens;
DROP TABLE owners;
DROP TABLE key_usage_daily;
ALTER TABLE api_keys DROP COLUMN last_used_at;
ALTER TABLE api_keys DROP COLUMN label;
