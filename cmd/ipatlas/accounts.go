package main

import (
	"context"
	"fmt"

	"github.com/ipatlas/ipatlas/internal/account"
)

const (
	usageAccountsCreate  = "create --name NAME --tier free|pro|enterprise [--monthly-limit N] [--credits N]"
	usageAccountsList    = "list"
	usageAccountsShow    = "show ACCOUNT_ID"
	usageAccountsSetTier = "set-tier ACCOUNT_ID free|pro|enterprise [--monthly-limit N]"
)

var accountsCommand = mgmtGroup("accounts", "manage accounts and tiers",
	mgmtSub(usageAccountsCreate, "create an account", runAccountsCreate),
	mgmtSub(usageAccountsList, "list the accounts", runAccountsList),
	mgmtSub(usageAccountsShow, "show an account and its keys", runAccountsShow),
	mgmtSub(usageAccountsSetTier, "change an account's tier", runAccountsSetTier),
	mgmtSub(usageAccountsInvite, "add an owner to an account and print their one-time link to set a password", runAccountsInvite),
	mgmtSub(usageAccountsOwners, "list an account's owners", runAccountsOwners),
	mgmtSub(usageAccountsResetLink, "print a one-time password reset link for an owner", runAccountsResetLink),
	mgmtSub(usageAccountsRequests, "list the owners' tier requests", runAccountsRequests),
	mgmtSub(usageAccountsApprove, "approve a tier request: the account moves to its tier", runAccountsApprove),
	mgmtSub(usageAccountsRefuse, "refuse a tier request", runAccountsRefuse),
	mgmtSub(usageAccountsAudit, "show the audit log of changes, of one account or all", runAccountsAudit),
)

func runAccountsCreate(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts create", usageAccountsCreate)
	name := c.fs.String("name", "", "the account's name (required)")
	tier := c.fs.String("tier", "free", "subscription tier: free (1,000 queries/month per key), pro (10,000) or enterprise (--monthly-limit)")
	limit := c.fs.Int64("monthly-limit", 0, "queries per key and month; enterprise only, and required for it")
	credits := c.fs.Int64("credits", -1, "initial credits (default: the tier's monthly limit)")
	if _, err := c.parse(args, 0); err != nil {
		return err
	}
	if *name == "" {
		return usageError("accounts create: --name is required")
	}
	t, err := account.ParseTier(*tier)
	if err != nil {
		return usageError(err.Error())
	}
	p := account.AccountParams{Name: *name, Tier: t, MonthlyLimit: *limit}
	if mgmtFlagSet(c.fs, "credits") {
		p.Credits = credits
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	a, err := svc.CreateAccount(ctx, p)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(a)
	}
	fmt.Fprintf(e.stdout, "Created account %d %q: %s tier, %s per key and month, %s.\n",
		a.ID, a.Name, a.Tier, plural(a.MonthlyLimit, "query", "queries"), plural(a.Credits, "credit", "credits"))
	fmt.Fprintf(e.stdout, "Create its API key with: ipatlas keys create --account %d\n", a.ID)
	return nil
}

func runAccountsList(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts list", usageAccountsList)
	if _, err := c.parse(args, 0); err != nil {
		return err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	as, err := svc.Accounts(ctx)
	if err != nil {
		return err
	}
	if as == nil {
		as = []account.Account{}
	}
	if c.json {
		return c.printJSON(as)
	}
	if len(as) == 0 {
		fmt.Fprintln(e.stdout, "No accounts yet. Create one with: ipatlas accounts create --name NAME --tier free")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "ID\tNAME\tTIER\tLIMIT/KEY/MONTH\tCREDITS\tCREATED")
	for _, a := range as {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", a.ID, a.Name, a.Tier, a.MonthlyLimit, a.Credits, mgmtTime(a.CreatedAt))
	}
	return tw.Flush()
}

// mgmtKeyView is a key with its usage this month, as listings show it.
type mgmtKeyView struct {
	account.Key
	Period string `json:"period"`
	Used   int64  `json:"used"`
}

// mgmtAccountKeys reads an account and its keys with their usage, as
// "accounts show" and "keys list" print them.
func mgmtAccountKeys(ctx context.Context, svc *account.Service, id int64) (account.Account, []mgmtKeyView, error) {
	a, err := svc.Account(ctx, id)
	if err != nil {
		return account.Account{}, nil, err
	}
	ks, err := svc.Keys(ctx, id)
	if err != nil {
		return account.Account{}, nil, err
	}
	out := make([]mgmtKeyView, 0, len(ks))
	for _, k := range ks {
		u, err := svc.Usage(ctx, k.ID)
		if err != nil {
			return account.Account{}, nil, err
		}
		out = append(out, mgmtKeyView{Key: k, Period: u.Period, Used: u.Used})
	}
	return a, out, nil
}

func runAccountsShow(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts show", usageAccountsShow)
	id, svc, done, err := c.openAccount(ctx, args)
	if err != nil {
		return err
	}
	defer done()
	a, kv, err := mgmtAccountKeys(ctx, svc, id)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(struct {
			account.Account
			Keys []mgmtKeyView `json:"keys"`
		}{a, kv})
	}
	tw := c.table()
	fmt.Fprintf(tw, "ID\t%d\n", a.ID)
	fmt.Fprintf(tw, "Name\t%s\n", a.Name)
	fmt.Fprintf(tw, "Tier\t%s\n", a.Tier)
	fmt.Fprintf(tw, "Limit\t%s per key and month\n", plural(a.MonthlyLimit, "query", "queries"))
	fmt.Fprintf(tw, "Credits\t%d\n", a.Credits)
	fmt.Fprintf(tw, "Created\t%s\n", mgmtTime(a.CreatedAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	return mgmtPrintKeys(c, kv, a.MonthlyLimit)
}

func mgmtPrintKeys(c *mgmtCmd, kv []mgmtKeyView, limit int64) error {
	if len(kv) == 0 {
		fmt.Fprintln(c.e.stdout, "No keys.")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "KEY ID\tPREFIX\tSTATUS\tUSED\tLIMIT\tPERIOD\tCREATED")
	for _, k := range kv {
		status := "active"
		if k.RevokedAt != nil {
			status = "revoked " + mgmtTime(*k.RevokedAt)
		}
		fmt.Fprintf(tw, "%s\t%s…\t%s\t%d\t%d\t%s\t%s\n", k.ID, k.Prefix, status, k.Used, limit, k.Period, mgmtTime(k.CreatedAt))
	}
	return tw.Flush()
}

func runAccountsSetTier(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts set-tier", usageAccountsSetTier)
	limit := c.fs.Int64("monthly-limit", 0, "queries per key and month; enterprise only, and required for it")
	pos, err := c.parse(args, 2)
	if err != nil {
		return err
	}
	id, err := mgmtAccountID(pos[0])
	if err != nil {
		return err
	}
	t, err := account.ParseTier(pos[1])
	if err != nil {
		return usageError(err.Error())
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	a, err := svc.SetTier(ctx, id, t, *limit)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(a)
	}
	fmt.Fprintf(e.stdout, "Account %d %q is now %s: %s per key and month.\n", a.ID, a.Name, a.Tier, plural(a.MonthlyLimit, "query", "queries"))
	return nil
}
