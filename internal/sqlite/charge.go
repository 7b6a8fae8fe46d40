package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// The charging transaction is at most seven statements whatever the
// number of keys in the batch: read every key (with its account's latest
// ledger entry), then write every monthly counter, every daily counter,
// every key's last use that is due, the ledger entries added to an
// account's latest one, the new ones, and every balance. A list of two or
// more goes as one JSON array (json_each): per-key statements cost ~25µs
// each in this driver, which at 64 keys a batch was most of a batch's CPU.
// A list of one, the usual batch of one busy key, goes bound to a
// statement of its own, which costs a third less than json_each over one
// element. The statements are prepared once, on the writer connection; a
// statement with nothing to write is skipped.
const (
	// chargeReadColumns are what readCharge scans, of a key k joined as
	// chargeReadJoins joins it.
	chargeReadColumns = `
		SELECT k.id, k.account_id, k.hash, k.revoked_at IS NOT NULL, a.tier, a.custom_limit, a.credits,
		       COALESCE(u.used, 0), COALESCE(k.last_used_at, ''),
		       COALESCE(l.id, 0), COALESCE(l.reason, ''), COALESCE(l.key_id, ''), COALESCE(l.delta, 0),
		       COALESCE(l.queries, 0), COALESCE(l.created_at, '')`
	chargeReadJoins = `
		JOIN accounts a ON a.id = k.account_id
		LEFT JOIN key_usage u ON u.key_id = k.id AND u.period = ?2
		LEFT JOIN ledger l ON l.id = (SELECT max(id) FROM ledger WHERE account_id = a.id)`
	sqlChargeRead = chargeReadColumns + `
		FROM json_each(?1) j
		JOIN api_keys k ON k.id = j.value` + chargeReadJoins
	// "WHERE true" settles SQLite's parsing ambiguity of INSERT ... SELECT
	// ... ON CONFLICT.
	sqlChargeUsage = `
		INSERT INTO key_usage (key_id, period, used)
		SELECT json_extract(j.value, '$[0]'), ?2, json_extract(j.value, '$[1]') FROM json_each(?1) j WHERE true
		ON CONFLICT (key_id, period) DO UPDATE SET used = key_usage.used + excluded.used`
	// The daily counters take the same [key, added] array as the monthly
	// counters.
	sqlChargeDaily = `
		INSERT INTO key_usage_daily (key_id, day, used)
		SELECT json_extract(j.value, '$[0]'), ?2, json_extract(j.value, '$[1]') FROM json_each(?1) j WHERE true
		ON CONFLICT (key_id, day) DO UPDATE SET used = key_usage_daily.used + excluded.used`
	// The last use is kept to the minute (account.LastUseStep): the
	// charge lists only the keys whose recorded use is older than that,
	// and most batches list none and skip the statement, and the page it
	// would write. It only moves forward, so a batch stamped earlier
	// (another process's clock) that commits later cannot set it back; the
	// fixed-width time text compares as time.
	sqlChargeLastUsed = `
		UPDATE api_keys SET last_used_at = ?2
		WHERE id IN (SELECT json_extract(j.value, '$[0]') FROM json_each(?1) j)
		  AND (last_used_at IS NULL OR last_used_at < ?2)`
	sqlChargeLedger = `
		INSERT INTO ledger (account_id, delta, balance, reason, key_id, queries, created_at)
		SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
		       'usage', json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]'), ?2
		FROM json_each(?1) j ORDER BY j.key`
	// A usage entry that the account's latest entry takes
	// (account.LedgerEntry.TakesUsage) is added to it.
	sqlChargeLedgerMerge = `
		UPDATE ledger SET delta = ledger.delta + m.delta, balance = m.balance, queries = ledger.queries + m.queries
		FROM (SELECT json_extract(j.value, '$[0]') AS id, json_extract(j.value, '$[1]') AS delta,
		             json_extract(j.value, '$[2]') AS balance, json_extract(j.value, '$[3]') AS queries
		      FROM json_each(?1) j) m
		WHERE ledger.id = m.id`
	sqlChargeCredits = `
		UPDATE accounts SET credits = b.credits
		FROM (SELECT json_extract(j.value, '$[0]') AS id, json_extract(j.value, '$[1]') AS credits FROM json_each(?1) j) b
		WHERE accounts.id = b.id`
)

// The same reads and writes for a list of one, its element's fields bound
// as the first parameters, the list statement's other parameters after
// them.
const (
	sqlChargeRead1 = chargeReadColumns + `
		FROM api_keys k` + chargeReadJoins + `
		WHERE k.id = ?1`
	sqlChargeUsage1 = `
		INSERT INTO key_usage (key_id, period, used) VALUES (?1, ?3, ?2)
		ON CONFLICT (key_id, period) DO UPDATE SET used = key_usage.used + excluded.used`
	sqlChargeDaily1 = `
		INSERT INTO key_usage_daily (key_id, day, used) VALUES (?1, ?3, ?2)
		ON CONFLICT (key_id, day) DO UPDATE SET used = key_usage_daily.used + excluded.used`
	sqlChargeLastUsed1 = `
		UPDATE api_keys SET last_used_at = ?2
		WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)`
	sqlChargeLedger1 = `
		INSERT INTO ledger (account_id, delta, balance, reason, key_id, queries, created_at)
		VALUES (?1, ?2, ?3, 'usage', ?4, ?5, ?6)`
	sqlChargeLedgerMerge1 = `
		UPDATE ledger SET delta = delta + ?2, balance = ?3, queries = queries + ?4 WHERE id = ?1`
	sqlChargeCredits1 = `
		UPDATE accounts SET credits = ?2 WHERE id = ?1`
)

type chargeStmts struct {
	read, usage, daily, lastUsed, ledger, ledgerMerge, credits        *sql.Stmt
	read1, usage1, daily1, lastUsed1, ledger1, ledgerMerge1, credits1 *sql.Stmt
}

func (cs *chargeStmts) all() []**sql.Stmt {
	return []**sql.Stmt{&cs.read, &cs.usage, &cs.daily, &cs.lastUsed, &cs.ledger, &cs.ledgerMerge, &cs.credits,
		&cs.read1, &cs.usage1, &cs.daily1, &cs.lastUsed1, &cs.ledger1, &cs.ledgerMerge1, &cs.credits1}
}

func prepareCharge(ctx context.Context, db *sql.DB) (*chargeStmts, error) {
	var cs chargeStmts
	texts := []string{sqlChargeRead, sqlChargeUsage, sqlChargeDaily, sqlChargeLastUsed, sqlChargeLedger, sqlChargeLedgerMerge, sqlChargeCredits,
		sqlChargeRead1, sqlChargeUsage1, sqlChargeDaily1, sqlChargeLastUsed1, sqlChargeLedger1, sqlChargeLedgerMerge1, sqlChargeCredits1}
	for i, dst := range cs.all() {
		st, err := db.PrepareContext(ctx, texts[i])
		if err != nil {
			cs.close()
			return nil, fmt.Errorf("sqlite: preparing the charge statements: %w", err)
		}
		*dst = st
	}
	return &cs, nil
}

func (cs *chargeStmts) close() {
	for _, st := range cs.all() {
		if *st != nil {
			(*st).Close()
		}
	}
}

// chargeKey is a key of the batch as read in the transaction, with its
// usage as the batch's grants raise it.
type chargeKey struct {
	account.ChargedKey
	used     int64
	added    int64  // queries this batch adds to the counter
	lastUsed string // as stored, "" when never used
}

// CheckCharge says whether a charge could be written now
// (account.ChargeChecker): with the charge journal, whether the journal
// takes its next record, by the writes a record takes; without it, a
// charge is a transaction like any other and Ping answers for it.
func (s *Store) CheckCharge(ctx context.Context) error {
	if s.jm != nil {
		return s.jm.check()
	}
	return s.Ping(ctx)
}

// Charge applies a batch of charges in one write transaction: one fsync
// for the whole batch. BEGIN IMMEDIATE holds the write lock from the first
// read, so what the read returns stays true until commit, whatever other
// processes do: the grants are computed in memory from it, exactly as if
// the requests ran one by one, and written back at once.
func (s *Store) Charge(ctx context.Context, period string, at time.Time, reqs []account.ChargeRequest) ([]account.Grant, error) {
	if err := account.CheckCharges(reqs); err != nil {
		return nil, err
	}
	if s.jm != nil {
		return s.jm.charge(ctx, period, at, reqs)
	}
	grants := make([]account.Grant, len(reqs))
	if len(reqs) == 0 {
		return grants, nil
	}
	ids := make([]string, 0, len(reqs))
	seen := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		if !seen[r.KeyID] {
			seen[r.KeyID] = true
			ids = append(ids, r.KeyID)
		}
	}
	read, idsArg := s.charge.read1, any(ids[0])
	if len(ids) > 1 {
		idsJSON, err := json.Marshal(ids)
		if err != nil {
			return nil, err
		}
		read, idsArg = s.charge.read, string(idsJSON)
	}

	err := s.inTx(ctx, func(tx *sql.Tx) error {
		keys, balances, tails, err := readCharge(ctx, tx.StmtContext(ctx, read), idsArg, period)
		if err != nil {
			return err
		}
		// Each write's rows, as the fields its statements take.
		var ledger [][]any  // account, delta, balance, key, queries
		var costs []int64   // per query, of each ledger entry
		var touched []int64 // accounts whose balance changes, in order
		for i, r := range reqs {
			g := grant(r, keys[r.KeyID], balances)
			grants[i] = g
			if g.Granted == 0 {
				continue
			}
			// Consecutive charges of one key at one cost are one ledger
			// entry, as one charge of their sum would be: under load a
			// batch is dozens of single queries of the same key, and an
			// entry each was a third of the batch's CPU. Only neighbours
			// merge, so every entry's balance still follows from the one
			// before it.
			if n := len(ledger); n > 0 && ledger[n-1][3] == r.KeyID && costs[n-1] == r.Cost {
				e := ledger[n-1]
				e[1], e[2], e[4] = e[1].(int64)-g.Granted*r.Cost, g.Credits, e[4].(int64)+g.Granted
				continue
			}
			costs = append(costs, r.Cost)
			ledger = append(ledger, []any{g.AccountID, -g.Granted * r.Cost, g.Credits, r.KeyID, g.Granted})
			if !containsID(touched, g.AccountID) {
				touched = append(touched, g.AccountID)
			}
		}
		if len(ledger) == 0 {
			return nil
		}
		var usage [][]any // key, added
		var stale [][]any // key: its recorded last use is a step or more old
		staleBefore := fmtTime(at.Add(-account.LastUseStep))
		for _, id := range ids {
			if k := keys[id]; k != nil && k.added > 0 {
				usage = append(usage, []any{id, k.added})
				if k.lastUsed == "" || k.lastUsed <= staleBefore {
					stale = append(stale, []any{id})
				}
			}
		}
		credits := make([][]any, len(touched)) // account, balance
		for i, id := range touched {
			credits[i] = []any{id, balances[id]}
		}
		// The first entry of each account may go into its latest entry.
		var merges [][]any // ledger ID, delta, balance, queries
		inserts := ledger[:0:0]
		first := make(map[int64]bool, len(touched))
		for i, e := range ledger {
			acct := e[0].(int64)
			if t, ok := tails[acct]; ok && !first[acct] && t.TakesUsage(e[3].(string), costs[i], at) {
				merges = append(merges, []any{t.ID, e[1], e[2], e[4]})
			} else {
				inserts = append(inserts, e)
			}
			first[acct] = true
		}
		atText := fmtTime(at)
		for _, w := range []struct {
			what      string
			stmt, one *sql.Stmt // for two rows or more (a JSON array of them), for one
			rows      [][]any   // none skips the statement
			args      []any     // the statements' parameters after the rows'
		}{
			{"usage", s.charge.usage, s.charge.usage1, usage, []any{period}},
			{"daily usage", s.charge.daily, s.charge.daily1, usage, []any{account.Day(at)}},
			{"last use", s.charge.lastUsed, s.charge.lastUsed1, stale, []any{atText}},
			{"ledger", s.charge.ledgerMerge, s.charge.ledgerMerge1, merges, nil},
			{"ledger", s.charge.ledger, s.charge.ledger1, inserts, []any{atText}},
			{"credits", s.charge.credits, s.charge.credits1, credits, nil},
		} {
			var stmt *sql.Stmt
			var args []any
			switch len(w.rows) {
			case 0:
				continue
			case 1:
				stmt, args = w.one, slices.Concat(w.rows[0], w.args)
			default:
				list, err := json.Marshal(w.rows)
				if err != nil {
					return err
				}
				stmt, args = w.stmt, append([]any{string(list)}, w.args...)
			}
			if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("sqlite: charge: %s: %w", w.what, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return grants, nil
}

// readCharge reads the batch's keys, their usage this period, their
// accounts' balances and each account's latest ledger entry (ID 0 when it
// has none).
func readCharge(ctx context.Context, read *sql.Stmt, ids any, period string) (map[string]*chargeKey, map[int64]int64, map[int64]account.LedgerEntry, error) {
	rows, err := read.QueryContext(ctx, ids, period)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sqlite: charge: %w", err)
	}
	defer rows.Close()
	keys := make(map[string]*chargeKey)
	balances := make(map[int64]int64)
	tails := make(map[int64]account.LedgerEntry)
	for rows.Next() {
		var (
			id, tier    string
			k           chargeKey
			custom, bal int64
			tail        account.LedgerEntry
			tailAt      string
		)
		if err := rows.Scan(&id, &k.AccountID, &k.Hash, &k.Revoked, &tier, &custom, &bal, &k.used, &k.lastUsed,
			&tail.ID, &tail.Reason, &tail.KeyID, &tail.Delta, &tail.Queries, &tailAt); err != nil {
			return nil, nil, nil, fmt.Errorf("sqlite: charge: %w", err)
		}
		if tail.ID != 0 {
			if tail.CreatedAt, err = parseTime(tailAt); err != nil {
				return nil, nil, nil, err
			}
		}
		k.Tier = account.Tier(tier)
		k.Limit = account.Limit(k.Tier, custom)
		keys[id] = &k
		balances[k.AccountID] = bal
		tails[k.AccountID] = tail
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("sqlite: charge: %w", err)
	}
	return keys, balances, tails, nil
}

// grant decides one request against the batch's running state and
// updates that state.
func grant(r account.ChargeRequest, k *chargeKey, balances map[int64]int64) account.Grant {
	if k == nil {
		return account.Decide(r, nil, 0, 0)
	}
	g := account.Decide(r, &k.ChargedKey, k.used, balances[k.AccountID])
	if g.Granted > 0 {
		k.used, k.added = g.Used, k.added+g.Granted
		balances[k.AccountID] = g.Credits
	}
	return g
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
