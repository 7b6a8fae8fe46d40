package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ipatlas/ipatlas/internal/accountstore"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

const (
	usageStoreBackup  = "backup FILE [--store DSN] [--json]"
	usageStoreRestore = "restore FILE [--store DSN] [--json]"
)

// storeCommand backs up and restores the SQLite account store. A
// PostgreSQL store is the database's to back up (pg_dump).
var storeCommand = mgmtGroup("store", "back up and restore the SQLite account store (store backup | restore)",
	mgmtSub(usageStoreBackup, "copy the store, with the charges its server has not yet written to the tables, to a new FILE, while the server runs", storeBackup),
	mgmtSub(usageStoreRestore, "put a backup FILE in the place of the store, keeping the replaced files (stop the server first)", storeRestore),
)

// sqliteTarget is the path of the SQLite store dsn names; a PostgreSQL
// store is refused with where to look instead.
func sqliteTarget(cmd, dsn string) (string, error) {
	kind, target, err := accountstore.ParseDSN(dsn)
	if err != nil {
		return "", usageError(err.Error())
	}
	if kind != "sqlite" {
		return "", usageError(cmd + ": the store is PostgreSQL; back it up and restore it with PostgreSQL's own tools (pg_dump, pg_restore; see docs/deployment.md, \"Backup and restore\")")
	}
	return target, nil
}

// mgmtBackup is the JSON of store backup.
type mgmtBackup struct {
	Store          string  `json:"store"`
	Backup         string  `json:"backup"`
	Bytes          int64   `json:"bytes"`
	SchemaVersion  int64   `json:"schema_version"`
	JournalCharges int     `json:"journal_records_applied"`
	AppliedSeq     uint64  `json:"journal_seq"`
	Seconds        float64 `json:"seconds"`
}

func storeBackup(c *mgmtCmd) mgmtOp[mgmtBackup] {
	var file, path string
	return mgmtOp[mgmtBackup]{
		check: func(pos []string) error { file = pos[0]; return nil },
		onDSN: func(ctx context.Context, dsn string) (mgmtBackup, error) {
			var err error
			if path, err = sqliteTarget("store backup", dsn); err != nil {
				return mgmtBackup{}, err
			}
			start := time.Now()
			info, err := sqlite.Backup(ctx, path, file)
			if err != nil {
				return mgmtBackup{}, err
			}
			return mgmtBackup{"sqlite:" + path, info.Path, info.Bytes, info.SchemaVersion, info.JournalCharges, info.AppliedSeq, time.Since(start).Seconds()}, nil
		},
		text: func(c *mgmtCmd, b mgmtBackup) error {
			w := c.e.stdout
			fmt.Fprintf(w, "Backed up sqlite:%s to %s (%s, schema version %d", path, b.Backup, plural(b.Bytes, "byte", "bytes"), b.SchemaVersion)
			if b.JournalCharges > 0 {
				fmt.Fprintf(w, "; %s of answered charges applied from the journal", plural(int64(b.JournalCharges), "record", "records"))
			}
			fmt.Fprintf(w, ").\nTo restore it, stop the server and run: %s store restore %s --store sqlite:%s\n", c.e.selfCommand(), b.Backup, path)
			return nil
		},
	}
}

// mgmtRestore is the JSON of store restore.
type mgmtRestore struct {
	Store         string   `json:"store"`
	Backup        string   `json:"backup"`
	SchemaVersion int64    `json:"schema_version"`
	Replaced      []string `json:"replaced"`
}

func storeRestore(c *mgmtCmd) mgmtOp[mgmtRestore] {
	var file string
	return mgmtOp[mgmtRestore]{
		check: func(pos []string) error { file = pos[0]; return nil },
		onDSN: func(ctx context.Context, dsn string) (mgmtRestore, error) {
			path, err := sqliteTarget("store restore", dsn)
			if err != nil {
				return mgmtRestore{}, err
			}
			info, err := sqlite.Restore(ctx, file, path, time.Now())
			if err != nil {
				return mgmtRestore{}, err
			}
			return mgmtRestore{"sqlite:" + info.Path, file, info.SchemaVersion, info.Replaced}, nil
		},
		text: func(c *mgmtCmd, r mgmtRestore) error {
			w := c.e.stdout
			fmt.Fprintf(w, "Restored %s into %s (schema version %d).\n", r.Backup, r.Store, r.SchemaVersion)
			for _, p := range r.Replaced {
				fmt.Fprintf(w, "Kept the replaced %s\n", p)
			}
			fmt.Fprintln(w, "Start the server again; it serves the backup's accounts, keys and ledger.")
			return nil
		},
	}
}
