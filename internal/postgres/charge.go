package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errConflict is a write that found a row other than the one read under
// lock. It cannot happen while the locking below is right; if it ever
// does, the batch is rolled back and runs again rather than over-grant.
var errConflict = errors.New("a counter changed under the charge's lock")

// Charge applies a batch of charges in one transaction, exactly whatever
// other replicas do at the same time:
//
//  1. The accounts of the batch's keys are locked, in ID order so that
//     concurrent batches cannot deadlock (SELECT ... ORDER BY id FOR NO
//     KEY UPDATE). Every charge and every credit change of an account
//     takes that lock, so from here on its balance and its keys'
//     counters are this transaction's alone. The lock is per account
//     and per batch: a hot key costs one lock per batch, not one per
//     query.
//  2. The keys and their counters are read by a second statement, whose
//     snapshot is taken after the lock was granted, so it sees every
//     charge committed before (in READ COMMITTED a locked read alone
//     would refresh the locked rows but not the joined counters).
//  3. The grants are decided in order (account.Decide), and
//     written as compare-and-set updates (WHERE credits = <read>, WHERE
//     used = <read>) whose row counts are checked, with the CHECK
//     constraints (credits >= 0) under them: PostgreSQL refuses any
//     write not based on what was read under the lock.
//
// The two reads and all writes each go in one pipelined round trip, so a
// batch costs four round trips (begin, read, write, commit) whatever its
// size. A failure before the commit rolls everything back and the batch
// runs again (up to attempts times, within the store's timeout); a failed
// commit is reported, never retried, as the commit may have happened.
func (s *Store) Charge(ctx context.Context, period string, at time.Time, reqs []account.ChargeRequest) ([]account.Grant, error) {
	if err := account.CheckCharges(reqs); err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return []account.Grant{}, nil
	}
	seen := make(map[string]bool, len(reqs))
	ids := make([]string, 0, len(reqs))
	for _, r := range reqs {
		if !seen[r.KeyID] {
			seen[r.KeyID] = true
			ids = append(ids, r.KeyID)
		}
	}
	var grants []account.Grant
	err := s.run(ctx, "charge", func(ctx context.Context) (err error) {
		grants, err = s.chargeTx(ctx, period, at, reqs, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	return grants, nil
}

type chargeKey struct {
	accountID  int64
	hash       []byte
	revoked    bool
	used       int64
	usedBefore int64
	hasRow     bool // a key_usage row exists for the period
}

type chargeAccount struct {
	tier          account.Tier
	custom        int64
	credits       int64
	creditsBefore int64
	tail          account.LedgerEntry // the latest ledger entry; ID 0 when none
}

// chargeTx runs one attempt; a failed commit is a commitError.
func (s *Store) chargeTx(ctx context.Context, period string, at time.Time, reqs []account.ChargeRequest, ids []string) ([]account.Grant, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) // a no-op after Commit

	accts, keys, err := lockAndRead(ctx, tx, period, ids)
	if err != nil {
		return nil, err
	}

	grants := make([]account.Grant, len(reqs))
	var ledger ledgerRows
	for i, r := range reqs {
		k := keys[r.KeyID]
		if k == nil {
			grants[i] = account.Decide(r, nil, 0, 0)
			continue
		}
		a := accts[k.accountID]
		if a == nil {
			// The key appeared after the accounts were locked.
			return nil, errConflict
		}
		g := account.Decide(r, &account.ChargedKey{AccountID: k.accountID, Hash: k.hash, Revoked: k.revoked,
			Tier: a.tier, Limit: account.Limit(a.tier, a.custom)}, k.used, a.credits)
		if g.Granted > 0 {
			k.used, a.credits = g.Used, g.Credits
			ledger.add(k.accountID, -g.Granted*r.Cost, a.credits, r.KeyID, g.Granted, r.Cost)
		}
		grants[i] = g
	}

	if len(ledger.accountIDs) > 0 {
		if err := write(ctx, tx, period, at, accts, keys, &ledger); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, commitError{err}
	}
	return grants, nil
}

// lockAndRead locks the batch's accounts and then reads its keys and
// their counters, in one round trip.
func lockAndRead(ctx context.Context, tx pgx.Tx, period string, ids []string) (map[int64]*chargeAccount, map[string]*chargeKey, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT id, tier, custom_limit, credits FROM accounts
		WHERE id IN (SELECT account_id FROM api_keys WHERE id = ANY($1))
		ORDER BY id FOR NO KEY UPDATE`, ids)
	b.Queue(`SELECT k.id, k.account_id, k.hash, k.revoked_at IS NOT NULL, u.used
		FROM api_keys k LEFT JOIN key_usage u ON u.key_id = k.id AND u.period = $2
		WHERE k.id = ANY($1)`, ids, period)
	// Every writer of an account's ledger holds the account's lock, so
	// its latest entry read now stays the latest until commit.
	b.Queue(`SELECT l.account_id, l.id, l.reason, COALESCE(l.key_id, ''), l.delta, l.queries, l.created_at
		FROM (SELECT DISTINCT account_id FROM api_keys WHERE id = ANY($1)) a
		CROSS JOIN LATERAL (SELECT * FROM ledger WHERE account_id = a.account_id ORDER BY id DESC LIMIT 1) l`, ids)
	br := tx.SendBatch(ctx, b)
	defer br.Close()

	accts := make(map[int64]*chargeAccount)
	rows, _ := br.Query()
	var (
		id    int64
		tier  string
		a     chargeAccount
		keyID string
		k     chargeKey
		used  *int64
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &tier, &a.custom, &a.credits}, func() error {
		a.tier, a.creditsBefore = account.Tier(tier), a.credits
		c := a
		accts[id] = &c
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	keys := make(map[string]*chargeKey, len(ids))
	rows, _ = br.Query()
	_, err = pgx.ForEachRow(rows, []any{&keyID, &k.accountID, &k.hash, &k.revoked, &used}, func() error {
		c := k
		c.hash = append([]byte(nil), k.hash...)
		if used != nil {
			c.used, c.usedBefore, c.hasRow = *used, *used, true
		}
		keys[keyID] = &c
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var tail account.LedgerEntry
	rows, _ = br.Query()
	_, err = pgx.ForEachRow(rows, []any{&tail.AccountID, &tail.ID, &tail.Reason, &tail.KeyID, &tail.Delta, &tail.Queries, &tail.CreatedAt}, func() error {
		if a := accts[tail.AccountID]; a != nil {
			a.tail = tail
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return accts, keys, br.Close()
}

// ledgerRows are the batch's usage entries as columns, in request order.
type ledgerRows struct {
	accountIDs, deltas, balances, queries []int64
	keyIDs                                []string
	costs                                 []int64 // per query, of each entry
}

// add appends a charge's entry. Neighbouring charges of one key at one
// cost are one entry, as one charge of their sum would be: under load a
// batch is dozens of single queries of the same key. Only neighbours
// merge, so every entry's balance still follows from the one before it.
// The SQLite store does the same (the store contract holds both to it).
func (l *ledgerRows) add(accountID, delta, balance int64, keyID string, queries, cost int64) {
	if n := len(l.keyIDs) - 1; n >= 0 && l.keyIDs[n] == keyID && l.costs[n] == cost {
		l.deltas[n] += delta
		l.balances[n] = balance
		l.queries[n] += queries
		return
	}
	l.costs = append(l.costs, cost)
	l.accountIDs = append(l.accountIDs, accountID)
	l.deltas = append(l.deltas, delta)
	l.balances = append(l.balances, balance)
	l.keyIDs = append(l.keyIDs, keyID)
	l.queries = append(l.queries, queries)
}

// write applies the batch's counters, balances and ledger entries in one
// round trip, as set-based statements over arrays, whatever the number of
// keys.
func write(ctx context.Context, tx pgx.Tx, period string, at time.Time, accts map[int64]*chargeAccount, keys map[string]*chargeKey, l *ledgerRows) error {
	var (
		updKeys            []string
		updBefore, updUsed []int64
		newKeys            []string
		newUsed            []int64
		acctIDs            []int64
		acctBefore, acctTo []int64
		usedKeys           []string // every key charged, with what it added
		added              []int64
	)
	for id, k := range keys {
		if k.used != k.usedBefore {
			usedKeys, added = append(usedKeys, id), append(added, k.used-k.usedBefore)
		}
		switch {
		case k.used == k.usedBefore:
		case k.hasRow:
			updKeys, updBefore, updUsed = append(updKeys, id), append(updBefore, k.usedBefore), append(updUsed, k.used)
		default:
			newKeys, newUsed = append(newKeys, id), append(newUsed, k.used)
		}
	}
	for id, a := range accts {
		if a.credits != a.creditsBefore {
			acctIDs, acctBefore, acctTo = append(acctIDs, id), append(acctBefore, a.creditsBefore), append(acctTo, a.credits)
		}
	}

	b := &pgx.Batch{}
	expect := func(q *pgx.QueuedQuery, n int) {
		q.Exec(func(ct pgconn.CommandTag) error {
			if ct.RowsAffected() != int64(n) {
				return fmt.Errorf("%w: %d of %d rows written by %q", errConflict, ct.RowsAffected(), n, ct.String())
			}
			return nil
		})
	}
	if len(updKeys) > 0 {
		expect(b.Queue(`UPDATE key_usage AS ku SET used = u.used
			FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(key_id, before, used)
			WHERE ku.key_id = u.key_id AND ku.period = $1 AND ku.used = u.before`,
			period, updKeys, updBefore, updUsed), len(updKeys))
	}
	if len(newKeys) > 0 {
		// A concurrent insert of one of these rows would fail this one
		// on the primary key, never add to it.
		expect(b.Queue(`INSERT INTO key_usage (key_id, period, used)
			SELECT u.key_id, $1, u.used FROM unnest($2::text[], $3::bigint[]) AS u(key_id, used)`,
			period, newKeys, newUsed), len(newKeys))
	}
	if len(usedKeys) > 0 {
		// The daily counters add rather than compare-and-set: they decide
		// no grant, and the account locks held make every charge of these
		// keys wait for this one anyway.
		expect(b.Queue(`INSERT INTO key_usage_daily (key_id, day, used)
			SELECT u.key_id, $1, u.added FROM unnest($2::text[], $3::bigint[]) AS u(key_id, added)
			ON CONFLICT (key_id, day) DO UPDATE SET used = key_usage_daily.used + excluded.used`,
			account.Day(at), usedKeys, added), len(usedKeys))
		// The last use is kept to the minute (account.LastUseStep), so
		// most batches match no row and write none. It only moves
		// forward, so a batch stamped earlier by another replica's clock
		// that commits later cannot set it back.
		b.Queue(`UPDATE api_keys SET last_used_at = $1
			WHERE id = ANY($2) AND (last_used_at IS NULL OR last_used_at <= $3)`, at, usedKeys, at.Add(-account.LastUseStep))
	}
	if len(acctIDs) > 0 {
		expect(b.Queue(`UPDATE accounts AS a SET credits = u.credits
			FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, before, credits)
			WHERE a.id = u.id AND a.credits = u.before`,
			acctIDs, acctBefore, acctTo), len(acctIDs))
	}
	// The first entry of each account may go into its latest entry; the
	// rest are inserted.
	var merge, ins ledgerRows
	var mergeIDs []int64
	first := make(map[int64]bool, len(accts))
	for i, acct := range l.accountIDs {
		if a := accts[acct]; a != nil && !first[acct] && a.tail.TakesUsage(l.keyIDs[i], l.costs[i], at) {
			mergeIDs = append(mergeIDs, a.tail.ID)
			merge.add(acct, l.deltas[i], l.balances[i], l.keyIDs[i], l.queries[i], l.costs[i])
		} else {
			ins.accountIDs = append(ins.accountIDs, acct)
			ins.deltas, ins.balances = append(ins.deltas, l.deltas[i]), append(ins.balances, l.balances[i])
			ins.keyIDs, ins.queries = append(ins.keyIDs, l.keyIDs[i]), append(ins.queries, l.queries[i])
		}
		first[acct] = true
	}
	if len(mergeIDs) > 0 {
		expect(b.Queue(`UPDATE ledger AS l SET delta = l.delta + u.delta, balance = u.balance, queries = l.queries + u.queries
			FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[]) AS u(id, delta, balance, queries)
			WHERE l.id = u.id`,
			mergeIDs, merge.deltas, merge.balances, merge.queries), len(mergeIDs))
	}
	if len(ins.accountIDs) > 0 {
		// Rows are inserted, and take their IDs, in request order, so
		// that an account's entries chain their balances in ID order.
		expect(b.Queue(`INSERT INTO ledger (account_id, delta, balance, reason, key_id, queries, created_at)
			SELECT u.account_id, u.delta, u.balance, 'usage', u.key_id, u.queries, $1
			FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[])
			     WITH ORDINALITY AS u(account_id, delta, balance, key_id, queries, ord)
			ORDER BY u.ord`,
			at, ins.accountIDs, ins.deltas, ins.balances, ins.keyIDs, ins.queries), len(ins.accountIDs))
	}
	return tx.SendBatch(ctx, b).Close()
}
