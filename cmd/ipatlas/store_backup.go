package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ipatlas/ipatlas/internal/sqlite"
)

const (
	usageStoreBackup  = "backup FILE [--store DSN] [--json]"
	usageStoreRestore = "restore FILE [--store DSN] [--json]"
)

// storeCommand backs up and restores the SQLite account store. A
// PostgreSQL store is the database's to back up (pg_dump).
var storeCommand = mgmtGroup("store", "back up and restore the SQLite account store (store backup | restore)",
	mgmtSub(usageStoreBackup, "copy the store, with the charges its server has not yet written to the tables, to a new FILE, while the server runs", runStoreBackup),
	mgmtSub(usageStoreRestore, "put a backup FILE in the place of the store, keeping the replaced files (stop the server first)", runStoreRestore),
)

// sqliteTarget is the path of the SQLite store the command's settings
// name; a PostgreSQL store is refused with where to look instead.
func (c *mgmtCmd) sqliteTarget(cmd string) (string, error) {
	dsn, err := c.storeDSN()
	if err != nil {
		return "", err
	}
	kind, target, err := parseStoreDSN(dsn)
	if err != nil {
		return "", usageError(err.Error())
	}
	if kind != "sqlite" {
		return "", usageError(cmd + ": the store is PostgreSQL; back it up and restore it with PostgreSQL's own tools (pg_dump, pg_restore; see docs/deployment.md, \"Backup and restore\")")
	}
	return target, nil
}

func runStoreBackup(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "store backup", usageStoreBackup)
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	path, err := c.sqliteTarget("store backup")
	if err != nil {
		return err
	}
	start := time.Now()
	info, err := sqlite.Backup(ctx, path, pos[0])
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(struct {
			Store          string  `json:"store"`
			Backup         string  `json:"backup"`
			Bytes          int64   `json:"bytes"`
			SchemaVersion  int64   `json:"schema_version"`
			JournalCharges int     `json:"journal_records_applied"`
			AppliedSeq     uint64  `json:"journal_seq"`
			Seconds        float64 `json:"seconds"`
		}{"sqlite:" + path, info.Path, info.Bytes, info.SchemaVersion, info.JournalCharges, info.AppliedSeq, time.Since(start).Seconds()})
	}
	fmt.Fprintf(e.stdout, "Backed up sqlite:%s to %s (%s, schema version %d", path, info.Path, plural(info.Bytes, "byte", "bytes"), info.SchemaVersion)
	if info.JournalCharges > 0 {
		fmt.Fprintf(e.stdout, "; %s of answered charges applied from the journal", plural(int64(info.JournalCharges), "record", "records"))
	}
	fmt.Fprintf(e.stdout, ").\nTo restore it, stop the server and run: %s store restore %s --store sqlite:%s\n", e.selfCommand(), info.Path, path)
	return nil
}

func runStoreRestore(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "store restore", usageStoreRestore)
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	path, err := c.sqliteTarget("store restore")
	if err != nil {
		return err
	}
	info, err := sqlite.Restore(ctx, pos[0], path, time.Now())
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(struct {
			Store         string   `json:"store"`
			Backup        string   `json:"backup"`
			SchemaVersion int64    `json:"schema_version"`
			Replaced      []string `json:"replaced"`
		}{"sqlite:" + info.Path, pos[0], info.SchemaVersion, info.Replaced})
	}
	fmt.Fprintf(e.stdout, "Restored %s into sqlite:%s (schema version %d).\n", pos[0], info.Path, info.SchemaVersion)
	for _, p := range info.Replaced {
		fmt.Fprintf(e.stdout, "Kept the replaced %s\n", p)
	}
	fmt.Fprintln(e.stdout, "Start the server again; it serves the backup's accounts, keys and ledger.")
	return nil
}
