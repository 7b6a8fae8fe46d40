-- The serving process charges by appending to a journal file beside the
-- database (see journal.go) and applies the journal to the tables in
-- batches. applied_seq is the sequence number of the last journal record
-- whose charges are in the tables; it is written by the same transaction
-- that applies them, so a record is applied exactly once. SQLite only: the
-- PostgreSQL store charges in one transaction per batch.

-- +goose Up
CREATE TABLE charge_journal (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    applied_seq INTEGER NOT NULL CHECK (applied_seq >= 0)
);
INSERT INTO charge_journal (id, applied_seq) VALUES (1, 0);

-- +goose Down
DROP TABLE charge_journal;
