package main

import (
	"context"
	"fmt"

	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// runDBMigrate applies the store's schema migrations (db migrate --store DSN).
// Opening a store migrates it too; this is for doing it ahead of time, for
// instance before starting servers that refuse an old schema.
func runDBMigrate(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "db migrate", "migrate [--store DSN] [--json]")
	if _, err := c.parse(args, 0); err != nil {
		return err
	}
	dsn, err := c.storeDSN()
	if err != nil {
		return err
	}
	kind, target, err := parseStoreDSN(dsn)
	if err != nil {
		return usageError(err.Error())
	}
	var from, to int64
	switch kind {
	case "sqlite":
		from, to, err = sqlite.Migrate(ctx, target)
	case "postgres":
		from, to, err = postgres.Migrate(ctx, target)
	default:
		err = fmt.Errorf("db migrate: unsupported store kind %q", kind)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(struct {
			Store string `json:"store"`
			From  int64  `json:"from_version"`
			To    int64  `json:"to_version"`
		}{kind, from, to})
	}
	if from == to {
		fmt.Fprintf(e.stdout, "The %s store is up to date (schema version %d).\n", kind, to)
		return nil
	}
	fmt.Fprintf(e.stdout, "Migrated the %s store from schema version %d to %d.\n", kind, from, to)
	return nil
}
