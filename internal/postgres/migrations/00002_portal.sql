-- Self-service: key labels and last use, daily usage counters, account
-- owners with their one-time links and sessions, tier requests and the
-- audit log. The PostgreSQL twin of the SQLite store's 00002_portal.sql,
-- with the substitutions listed in 00001_accounts.sql.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN label TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN last_used_at TIMESTAMPTZ;

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
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id     BIGINT  NOT NULL REFERENCES accounts (id),
    email          TEXT    NOT NULL UNIQUE,
    password_hash  TEXT    NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ   NOT NULL,
    failed_signins BIGINT  NOT NULL DEFAULT 0,
    locked_until   TIMESTAMPTZ
);
CREATE INDEX owners_account ON owners (account_id);

-- One-time links (invitations, password resets): only the SHA-256 of
-- the token is kept.
CREATE TABLE owner_tokens (
    hash       BYTEA  PRIMARY KEY,
    owner_id   BIGINT NOT NULL REFERENCES owners (id),
    purpose    TEXT   NOT NULL CHECK (purpose IN ('invite', 'reset')),
    created_at TIMESTAMPTZ  NOT NULL,
    expires_at TIMESTAMPTZ  NOT NULL,
    used_at    TIMESTAMPTZ
);
CREATE INDEX owner_tokens_owner ON owner_tokens (owner_id);

-- Signed-in browsers: the SHA-256 of the cookie's secret, a public id for
-- the audit log, and the CSRF token the page sends back. owner_id is NULL
-- for an operator's console session.
CREATE TABLE sessions (
    id           TEXT   PRIMARY KEY,
    hash         BYTEA  NOT NULL UNIQUE,
    kind         TEXT   NOT NULL CHECK (kind IN ('owner', 'operator')),
    owner_id     BIGINT REFERENCES owners (id),
    csrf         TEXT   NOT NULL,
    created_at   TIMESTAMPTZ  NOT NULL,
    last_seen_at TIMESTAMPTZ  NOT NULL,
    expires_at   TIMESTAMPTZ  NOT NULL,
    revoked_at   TIMESTAMPTZ,
    CHECK ((kind = 'owner') = (owner_id IS NOT NULL))
);
CREATE INDEX sessions_owner ON sessions (owner_id);

-- Owners' requests to change tier; at most one pending per account.
CREATE TABLE tier_requests (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id    BIGINT  NOT NULL REFERENCES accounts (id),
    owner_id      BIGINT  REFERENCES owners (id),
    tier          TEXT    NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
    monthly_limit BIGINT  NOT NULL DEFAULT 0 CHECK (monthly_limit >= 0),
    note          TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'refused')),
    created_at    TIMESTAMPTZ   NOT NULL,
    decided_at    TIMESTAMPTZ
);
CREATE UNIQUE INDEX tier_requests_one_pending ON tier_requests (account_id) WHERE status = 'pending';

-- Every change made through the service: what, to which account, when and
-- by whom ("session:<id>", "token", "owner:<id>/session:<id>", "cli").
CREATE TABLE audit_log (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         TIMESTAMPTZ    NOT NULL,
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
