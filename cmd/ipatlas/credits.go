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
	mgmtSub(usageCreditsAdd, "add (or with a negative AMOUNT deduct) credits", runCreditsAdd),
	mgmtSub(usageCreditsShow, "show an account's balance", runCreditsShow),
	mgmtSub(usageCreditsHistory, "show an account's ledger", runCreditsHistory),
)

func runCreditsAdd(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "credits add", usageCreditsAdd)
	reason := c.fs.String("reason", "", "why the balance changes, kept in the ledger (required)")
	pos, err := c.parse(args, 2)
	if err != nil {
		return err
	}
	id, err := mgmtAccountID(pos[0])
	if err != nil {
		return err
	}
	amount, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || amount == 0 {
		return usageError(fmt.Sprintf("credits add: %q is not a non-zero whole number of credits", pos[1]))
	}
	if strings.TrimSpace(*reason) == "" {
		return usageError("credits add: --reason is required")
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	entry, err := svc.AddCredits(ctx, id, amount, *reason)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(entry)
	}
	verb := "Added"
	n := amount
	if amount < 0 {
		verb, n = "Deducted", -amount
	}
	fmt.Fprintf(e.stdout, "%s %s (account %d): the balance is now %d.\n", verb, plural(n, "credit", "credits"), id, entry.Balance)
	return nil
}

// mgmtCreditsView is the JSON of credits show; scripts read "credits".
type mgmtCreditsView struct {
	AccountID int64  `json:"account_id"`
	Name      string `json:"name"`
	Credits   int64  `json:"credits"`
}

func runCreditsShow(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "credits show", usageCreditsShow)
	id, svc, done, err := c.openAccount(ctx, args)
	if err != nil {
		return err
	}
	defer done()
	a, err := svc.Account(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(mgmtCreditsView{AccountID: a.ID, Name: a.Name, Credits: a.Credits})
	}
	fmt.Fprintf(e.stdout, "Account %d %q has %s.\n", a.ID, a.Name, plural(a.Credits, "credit", "credits"))
	return nil
}

func runCreditsHistory(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "credits history", usageCreditsHistory)
	limit := c.fs.Int("limit", 0, "show at most N entries, newest first (0: all)")
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	id, err := mgmtAccountID(pos[0])
	if err != nil {
		return err
	}
	if *limit < 0 {
		return usageError("credits history: --limit must not be negative")
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	es, err := svc.Ledger(ctx, id, *limit)
	if err != nil {
		return err
	}
	if es == nil {
		es = []account.LedgerEntry{}
	}
	if c.json {
		return c.printJSON(es)
	}
	if len(es) == 0 {
		fmt.Fprintf(e.stdout, "Account %d has no ledger entries.\n", id)
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
}
