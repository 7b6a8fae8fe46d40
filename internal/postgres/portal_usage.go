package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/jackc/pgx/v5"
)

// SetKeyLabel changes a key's label.
func (s *Store) SetKeyLabel(ctx context.Context, id, label string) (account.Key, error) {
	var k account.Key
	err := s.run(ctx, "set key label", func(ctx context.Context) (err error) { // idempotent
		k, err = scanKey(s.pool.QueryRow(ctx,
			"UPDATE api_keys SET label = $1 WHERE id = $2 RETURNING "+keyCols, label, id))
		return err
	})
	return k, err
}

// KeyUsages maps each key of an account to its usage in period; keys
// without usage are absent.
func (s *Store) KeyUsages(ctx context.Context, accountID int64, period string) (map[string]int64, error) {
	var out map[string]int64
	err := s.run(ctx, "key usages", func(ctx context.Context) error {
		if err := accountExists(ctx, s.pool, accountID); err != nil {
			return err
		}
		out = map[string]int64{}
		rows, _ := s.pool.Query(ctx,
			`SELECT u.key_id, u.used FROM api_keys k JOIN key_usage u ON u.key_id = k.id
			 WHERE k.account_id = $1 AND u.period = $2 AND u.used > 0`, accountID, period)
		var id string
		var used int64
		_, err := pgx.ForEachRow(rows, []any{&id, &used}, func() error {
			out[id] = used
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DailyUsage lists an account's per-key daily counters for the days
// from..to, ordered by day then key.
func (s *Store) DailyUsage(ctx context.Context, accountID int64, from, to string) ([]account.DayUsage, error) {
	if err := account.CheckDays(from, to); err != nil {
		return nil, err
	}
	var out []account.DayUsage
	err := s.run(ctx, "daily usage", func(ctx context.Context) (err error) {
		if err := accountExists(ctx, s.pool, accountID); err != nil {
			return err
		}
		rows, _ := s.pool.Query(ctx,
			`SELECT d.day, d.key_id, d.used FROM api_keys k JOIN key_usage_daily d ON d.key_id = k.id
			 WHERE k.account_id = $1 AND d.day BETWEEN $2 AND $3 AND d.used > 0
			 ORDER BY d.day COLLATE "C", d.key_id COLLATE "C"`, accountID, from, to)
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.DayUsage, error) {
			var d account.DayUsage
			err := r.Scan(&d.Day, &d.KeyID, &d.Queries)
			return d, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []account.DayUsage{}
	}
	return out, nil
}

// LedgerPage lists an account's entries with ID < before (0: from the
// newest), newest first, at most limit.
func (s *Store) LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]account.LedgerEntry, error) {
	if err := account.CheckPage(before, limit); err != nil {
		return nil, err
	}
	var es []account.LedgerEntry
	err := s.run(ctx, "ledger page", func(ctx context.Context) (err error) {
		if err := accountExists(ctx, s.pool, accountID); err != nil {
			return err
		}
		rows, _ := s.pool.Query(ctx,
			"SELECT "+ledgerCols+` FROM ledger WHERE account_id = $1 AND ($2::bigint = 0 OR id < $2::bigint)
			 ORDER BY id DESC LIMIT $3`, accountID, before, limit)
		es, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.LedgerEntry, error) { return scanLedger(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if es == nil {
		es = []account.LedgerEntry{}
	}
	return es, nil
}

// summaryCols are an account's columns (a) followed by its usage in the
// period $1 and its count of live keys.
const summaryCols = `a.id, a.name, a.tier, a.custom_limit, a.credits, a.created_at,
	COALESCE((SELECT SUM(u.used) FROM api_keys k JOIN key_usage u ON u.key_id = k.id
	          WHERE k.account_id = a.id AND u.period = $1), 0)::bigint,
	(SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL)`

func collectSummaries(rows pgx.Rows, period string) ([]account.AccountSummary, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.AccountSummary, error) {
		var sum account.AccountSummary
		a, err := scanAccount(summaryRow{r, &sum.Used, &sum.Keys})
		sum.Account, sum.Period = a, period
		return sum, err
	})
	if out == nil {
		out = []account.AccountSummary{}
	}
	return out, err
}

// summaryRow lets scanAccount read a row that has two more columns.
type summaryRow struct {
	row        pgx.Row
	used, keys *int64
}

func (s summaryRow) Scan(dest ...any) error { return s.row.Scan(append(dest, s.used, s.keys)...) }

// SearchAccounts lists accounts whose name contains q (case-insensitive)
// or whose ID or owner email equals q, ordered by ID, with their usage in
// period; all when q is empty.
func (s *Store) SearchAccounts(ctx context.Context, q, period string, limit int) ([]account.AccountSummary, error) {
	if err := account.CheckListLimit(limit); err != nil {
		return nil, err
	}
	q = strings.TrimSpace(q)
	id, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		id = 0 // no account has ID 0
	}
	var out []account.AccountSummary
	err = s.run(ctx, "search accounts", func(ctx context.Context) (err error) {
		rows, _ := s.pool.Query(ctx,
			"SELECT "+summaryCols+` FROM accounts a
			 WHERE $2::text = '' OR strpos(lower(a.name), lower($2::text)) > 0 OR a.id = $3
			    OR a.id IN (SELECT o.account_id FROM owners o WHERE o.email = $4)
			 ORDER BY a.id LIMIT $5`,
			period, q, id, strings.ToLower(q), limit)
		out, err = collectSummaries(rows, period)
		return err
	})
	return out, err
}

// TopConsumers lists the n accounts with the most queries in period, most
// first, ties by ID; accounts without usage are absent.
func (s *Store) TopConsumers(ctx context.Context, period string, n int) ([]account.AccountSummary, error) {
	if err := account.CheckListLimit(n); err != nil {
		return nil, err
	}
	var out []account.AccountSummary
	err := s.run(ctx, "top consumers", func(ctx context.Context) (err error) {
		rows, _ := s.pool.Query(ctx,
			`WITH top AS (
				SELECT k.account_id AS id, SUM(u.used)::bigint AS used
				FROM key_usage u JOIN api_keys k ON k.id = u.key_id
				WHERE u.period = $1 GROUP BY k.account_id HAVING SUM(u.used) > 0
				ORDER BY used DESC, id LIMIT $2)
			 SELECT a.id, a.name, a.tier, a.custom_limit, a.credits, a.created_at, top.used,
			        (SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL)
			 FROM top JOIN accounts a ON a.id = top.id
			 ORDER BY top.used DESC, a.id`, period, n)
		out, err = collectSummaries(rows, period)
		return err
	})
	return out, err
}
