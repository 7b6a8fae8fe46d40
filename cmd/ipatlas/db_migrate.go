package main

import (
	"context"
	"fmt"

	"github.com/ipatlas/ipatlas/internal/accountstore"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// dbMigrate applies the store's schema migrations (db migrate --store
// DSN). Opening a store migrates it too; this is for doing it ahead of
// time, for instance before starting servers that refuse an old schema.
var dbMigrate = mgmtSub("migrate [--store DSN] [--json]", "apply the account store's schema migrations", func(c *mgmtCmd) mgmtOp[mgmtMigration] {
	return mgmtOp[mgmtMigration]{
		onDSN: func(ctx context.Context, dsn string) (mgmtMigration, error) {
			kind, target, err := accountstore.ParseDSN(dsn)
			if err != nil {
				return mgmtMigration{}, usageError(err.Error())
			}
			m := mgmtMigration{Store: kind}
			switch kind {
			case "sqlite":
				m.From, m.To, err = sqlite.Migrate(ctx, target)
			case "postgres":
				m.From, m.To, err = postgres.Migrate(ctx, target)
			default:
				err = fmt.Errorf("db migrate: unsupported store kind %q", kind)
			}
			return m, err
		},
		text: func(c *mgmtCmd, m mgmtMigration) error {
			if m.From == m.To {
				fmt.Fprintf(c.e.stdout, "The %s store is up to date (schema version %d).\n", m.Store, m.To)
				return nil
			}
			fmt.Fprintf(c.e.stdout, "Migrated the %s store from schema version %d to %d.\n", m.Store, m.From, m.To)
			return nil
		},
	}
})("db")

// mgmtMigration is the JSON of db migrate.
type mgmtMigration struct {
	Store string `json:"store"`
	From  int64  `json:"from_version"`
	To    int64  `json:"to_version"`
}

func runDBMigrate(ctx context.Context, e env, args []string) error {
	return dbMigrate.run(ctx, e, args)
}
