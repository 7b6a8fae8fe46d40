//go:build !unix

package sqlite

import (
	"context"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// journaled is the journal's charge path, which needs flock and
// fdatasync: elsewhere Options.Journal is ignored and every charge is one
// transaction.
type journaled struct{}

func (s *Store) startJournal(context.Context, Options) error { return nil }

func (jm *journaled) settle(context.Context) error { return nil }

func (jm *journaled) check() error { return nil }

func (jm *journaled) close(context.Context) error { return nil }
func (jm *journaled) exclusive(_ context.Context, fn func() error) error {
	return fn()
}
func (jm *journaled) charge(context.Context, string, time.Time, []account.ChargeRequest) ([]account.Grant, error) {
	panic("unreachable")
}

// catchUpOutside has no journal to catch up with here.
func (s *Store) catchUpOutside(context.Context, bool) error { return nil }
