package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas/internal/account"
)

const (
	usageCreditsAdd     = "add ACCOUNT_ID AMOUNT --reason TEXT"
	usageCreditsShow    = "show ACCOUNT_ID"
	usageCreditsHistory = "history ACCOUNT_ID [--limit N]"
)

// creditsCommand manages credit balances. Every change is a ledger entry
// with its reason and time.
var creditsCommand = mgmtGroup("credits", "manage credit balances",
	mgmtSub(usageCreditsAdd, "add (or with a negative AMOUNT deduct) credits", creditsAdd),
	mgmtSub(usageCreditsShow, "show an account's balance", creditsShow),
	mgmtSub(usageCreditsHistory, "show an account's ledger", creditsHistory),
)

func creditsAdd(c *mgmtCmd) mgmtOp[account.LedgerEntry] {
	reason := c.fs.String("reason", "", "why the balance changes, kept in the ledger (required)")
	var id, amount int64
	return mgmtOp[account.LedgerEntry]{
		check: func(pos []string) (err error) {
			if id, err = mgmtAccountID(pos[0]); err != nil {
				return err
			}
			amount, err = strconv.ParseInt(pos[1], 10, 64)
			if err != nil || amount == 0 {
				return usageError(fmt.Sprintf("credits add: %q is not a non-zero whole number of credits", pos[1]))
			}
			if strings.TrimSpace(*reason) == "" {
				return usageError("credits add: --reason is required")
			}
			return nil
		},
		call: func(ctx context.Context, svc *account.Service) (account.LedgerEntry, error) {
			return svc.AddCredits(ctx, id, amount, *reason)
		},
		text: func(c *mgmtCmd, entry account.LedgerEntry) error {
			verb := "Added"
			n := amount
			if amount < 0 {
				verb, n = "Deducted", -amount
			}
			fmt.Fprintf(c.e.stdout, "%s %s (account %d): the balance is now %d.\n", verb, plural(n, "credit", "credits"), id, entry.Balance)
			return nil
		},
	}
}

// mgmtCreditsView is the JSON of credits show; scripts read "credits".
type mgmtCreditsView struct {
	AccountID int64  `json:"account_id"`
	Name      string `json:"name"`
	Credits   int64  `json:"credits"`
}

func creditsShow(c *mgmtCmd) mgmtOp[mgmtCreditsView] {
	var id int64
	return mgmtOp[mgmtCreditsView]{
		check: func(pos []string) (err error) {
			id, err = mgmtAccountID(pos[0])
			return err
		},
		call: func(ctx context.Context, svc *account.Service) (mgmtCreditsView, error) {
			a, err := svc.Account(ctx, id)
			return mgmtCreditsView{AccountID: a.ID, Name: a.Name, Credits: a.Credits}, err
		},
		text: func(c *mgmtCmd, v mgmtCreditsView) error {
			fmt.Fprintf(c.e.stdout, "Account %d %q has %s.\n", v.AccountID, v.Name, plural(v.Credits, "credit", "credits"))
			return nil
		},
	}
}

func creditsHistory(c *mgmtCmd) mgmtOp[[]account.LedgerEntry] {
	limit := c.fs.Int("limit", 0, "show at most N entries, newest first (0: all)")
	var id int64
	return mgmtOp[[]account.LedgerEntry]{
		check: func(pos []string) (err error) {
			if id, err = mgmtAccountID(pos[0]); err != nil {
				return err
			}
			if *limit < 0 {
				return usageError("credits history: --limit must not be negative")
			}
			return nil
		},
		call: func(ctx context.Context, svc *account.Service) ([]account.LedgerEntry, error) {
			es, err := svc.Ledger(ctx, id, *limit)
			if es == nil {
				es = []account.LedgerEntry{}
			}
			return es, err
		},
		text: func(c *mgmtCmd, es []account.LedgerEntry) error {
			if len(es) == 0 {
				fmt.Fprintf(c.e.stdout, "Account %d has no ledger entries.\n", id)
				return nil
			}
			tw := c.table()
			fmt.Fprintln(tw, "TIME\tDELTA\tBALANCE\tREASON\tKEY\tQUERIES")
			for _, en := range es {
				key, queries := "-", "-"
				if en.KeyID != "" {
					key, queries = en.KeyID, strconv.FormatInt(en.Queries, 10)
				}
				fmt.Fprintf(tw, "%s\t%+d\t%d\t%s\t%s\t%s\n", mgmtTime(en.CreatedAt), en.Delta, en.Balance, oneLine(en.Reason), key, queries)
			}
			return tw.Flush()
		},
	}
}
