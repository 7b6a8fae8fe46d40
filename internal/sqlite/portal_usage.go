package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas/internal/account"
)

// SetKeyLabel changes a key's label.
func (s *Store) SetKeyLabel(ctx context.Context, id, label string) (account.Key, error) {
	return scanKey(s.w.QueryRowContext(ctx,
		"UPDATE api_keys SET label = ? WHERE id = ? RETURNING "+keyCols, label, id))
}

// KeyUsages maps each key of an account to its usage in period; keys
// without usage are absent.
func (s *Store) KeyUsages(ctx context.Context, accountID int64, period string) (map[string]int64, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := accountExists(ctx, s.r, accountID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT u.key_id, u.used FROM api_keys k JOIN key_usage u ON u.key_id = k.id
		 WHERE k.account_id = ? AND u.period = ? AND u.used > 0`, accountID, period)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var used int64
		if err := rows.Scan(&id, &used); err != nil {
			return nil, err
		}
		out[id] = used
	}
	return out, rows.Err()
}

// DailyUsage lists an account's per-key daily counters for the days
// from..to, ordered by day then key.
func (s *Store) DailyUsage(ctx context.Context, accountID int64, from, to string) ([]account.DayUsage, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := account.CheckDays(from, to); err != nil {
		return nil, err
	}
	if err := accountExists(ctx, s.r, accountID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s.r, func(sc scanner) (d account.DayUsage, err error) {
		return d, sc.Scan(&d.Day, &d.KeyID, &d.Queries)
	}, `SELECT d.day, d.key_id, d.used FROM api_keys k JOIN key_usage_daily d ON d.key_id = k.id
		 WHERE k.account_id = ? AND d.day BETWEEN ? AND ? AND d.used > 0
		 ORDER BY d.day, d.key_id`, accountID, from, to)
}

// LedgerPage lists an account's entries with ID < before (0: from the
// newest), newest first, at most limit.
func (s *Store) LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]account.LedgerEntry, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := account.CheckPage(before, limit); err != nil {
		return nil, err
	}
	if err := accountExists(ctx, s.r, accountID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s.r, scanLedger,
		"SELECT "+ledgerCols+` FROM ledger WHERE account_id = ?1 AND (?2 = 0 OR id < ?2)
		 ORDER BY id DESC LIMIT ?3`, accountID, before, limit)
}

// summaryCols are an account's columns (a) followed by its usage in the
// period ?1 and its count of live keys.
const summaryCols = `a.id, a.name, a.tier, a.custom_limit, a.credits, a.created_at,
	COALESCE((SELECT SUM(u.used) FROM api_keys k JOIN key_usage u ON u.key_id = k.id
	          WHERE k.account_id = a.id AND u.period = ?1), 0),
	(SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL)`

// scanSummary reads an account row followed by its usage in period and
// its count of live keys.
func scanSummary(period string) func(scanner) (account.AccountSummary, error) {
	return func(sc scanner) (account.AccountSummary, error) {
		sum := account.AccountSummary{Period: period}
		a, err := scanAccount(summaryScanner{sc, &sum.Used, &sum.Keys})
		sum.Account = a
		return sum, err
	}
}

// summaryScanner lets scanAccount read a row that has two more columns.
type summaryScanner struct {
	rows       scanner
	used, keys *int64
}

func (s summaryScanner) Scan(dest ...any) error {
	return s.rows.Scan(append(dest, s.used, s.keys)...)
}

// SearchAccounts lists accounts whose name contains q (case-insensitive;
// SQLite folds ASCII letters only) or whose ID or owner email equals q,
// ordered by ID, with their usage in period; all when q is empty.
func (s *Store) SearchAccounts(ctx context.Context, q, period string, limit int) ([]account.AccountSummary, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := account.CheckListLimit(limit); err != nil {
		return nil, err
	}
	q = strings.TrimSpace(q)
	id, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		id = 0 // no account has ID 0
	}
	out, err := queryAll(ctx, s.r, scanSummary(period),
		"SELECT "+summaryCols+` FROM accounts a
		 WHERE ?2 = '' OR instr(lower(a.name), lower(?2)) > 0 OR a.id = ?3
		    OR a.id IN (SELECT o.account_id FROM owners o WHERE o.email = ?4)
		 ORDER BY a.id LIMIT ?5`,
		period, q, id, strings.ToLower(q), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search accounts: %w", err)
	}
	return out, nil
}

// TopConsumers lists the n accounts with the most queries in period, most
// first, ties by ID; accounts without usage are absent.
func (s *Store) TopConsumers(ctx context.Context, period string, n int) ([]account.AccountSummary, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := account.CheckListLimit(n); err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, s.r, scanSummary(period),
		`WITH top AS (
			SELECT k.account_id AS id, SUM(u.used) AS used
			FROM key_usage u JOIN api_keys k ON k.id = u.key_id
			WHERE u.period = ?1 GROUP BY k.account_id HAVING SUM(u.used) > 0
			ORDER BY used DESC, id LIMIT ?2)
		 SELECT a.id, a.name, a.tier, a.custom_limit, a.credits, a.created_at, top.used,
		        (SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL)
		 FROM top JOIN accounts a ON a.id = top.id
		 ORDER BY top.used DESC, a.id`, period, n)
	if err != nil {
		return nil, fmt.Errorf("sqlite: top consumers: %w", err)
	}
	return out, nil
}
