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
	mgmtSub(usageAccountsCreate, "create an account", accountsCreate),
	mgmtSub(usageAccountsList, "list the accounts", accountsList),
	mgmtSub(usageAccountsShow, "show an account and its keys", accountsShow),
	mgmtSub(usageAccountsSetTier, "change an account's tier", accountsSetTier),
	mgmtSub(usageAccountsInvite, "add an owner to an account and print their one-time link to set a password", accountsInvite),
	mgmtSub(usageAccountsOwners, "list an account's owners", accountsOwners),
	mgmtSub(usageAccountsResetLink, "print a one-time password reset link for an owner", accountsResetLink),
	mgmtSub(usageAccountsRequests, "list the owners' tier requests", accountsRequests),
	mgmtSub(usageAccountsApprove, "approve a tier request: the account moves to its tier", accountsApprove),
	mgmtSub(usageAccountsRefuse, "refuse a tier request", accountsRefuse),
	mgmtSub(usageAccountsAudit, "show the audit log of changes, of one account or all", accountsAudit),
)

func accountsCreate(c *mgmtCmd) mgmtOp[account.Account] {
	name := c.fs.String("name", "", "the account's name (required)")
	tier := c.fs.String("tier", "free", "subscription tier: free (1,000 queries/month per key), pro (10,000) or enterprise (--monthly-limit)")
	limit := c.fs.Int64("monthly-limit", 0, "queries per key and month; enterprise only, and required for it")
	credits := c.fs.Int64("credits", -1, "initial credits (default: the tier's monthly limit)")
	var p account.AccountParams
	return mgmtOp[account.Account]{
		check: func([]string) error {
			if *name == "" {
				return usageError("accounts create: --name is required")
			}
			t, err := account.ParseTier(*tier)
			if err != nil {
				return usageError(err.Error())
			}
			p = account.AccountParams{Name: *name, Tier: t, MonthlyLimit: *limit}
			if mgmtFlagSet(c.fs, "credits") {
				p.Credits = credits
			}
			return nil
		},
		call: func(ctx context.Context, svc *account.Service) (account.Account, error) {
			return svc.CreateAccount(ctx, p)
		},
		text: func(c *mgmtCmd, a account.Account) error {
			fmt.Fprintf(c.e.stdout, "Created account %d %q: %s tier, %s per key and month, %s.\n",
				a.ID, a.Name, a.Tier, plural(a.MonthlyLimit, "query", "queries"), plural(a.Credits, "credit", "credits"))
			fmt.Fprintf(c.e.stdout, "Create its API key with: ipatlas keys create --account %d\n", a.ID)
			return nil
		},
	}
}

func accountsList(c *mgmtCmd) mgmtOp[[]account.Account] {
	return mgmtOp[[]account.Account]{
		call: func(ctx context.Context, svc *account.Service) ([]account.Account, error) {
			as, err := svc.Accounts(ctx)
			if as == nil {
				as = []account.Account{}
			}
			return as, err
		},
		text: func(c *mgmtCmd, as []account.Account) error {
			if len(as) == 0 {
				fmt.Fprintln(c.e.stdout, "No accounts yet. Create one with: ipatlas accounts create --name NAME --tier free")
				return nil
			}
			tw := c.table()
			fmt.Fprintln(tw, "ID\tNAME\tTIER\tLIMIT/KEY/MONTH\tCREDITS\tCREATED")
			for _, a := range as {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", a.ID, a.Name, a.Tier, a.MonthlyLimit, a.Credits, mgmtTime(a.CreatedAt))
			}
			return tw.Flush()
		},
	}
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

// mgmtAccountView is an account with its keys, as accounts show prints it.
type mgmtAccountView struct {
	account.Account
	Keys []mgmtKeyView `json:"keys"`
}

func accountsShow(c *mgmtCmd) mgmtOp[mgmtAccountView] {
	var id int64
	return mgmtOp[mgmtAccountView]{
		check: func(pos []string) (err error) {
			id, err = mgmtAccountID(pos[0])
			return err
		},
		call: func(ctx context.Context, svc *account.Service) (mgmtAccountView, error) {
			a, kv, err := mgmtAccountKeys(ctx, svc, id)
			return mgmtAccountView{a, kv}, err
		},
		text: func(c *mgmtCmd, v mgmtAccountView) error {
			a := v.Account
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
			fmt.Fprintln(c.e.stdout)
			return mgmtPrintKeys(c, v.Keys, a.MonthlyLimit)
		},
	}
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

func accountsSetTier(c *mgmtCmd) mgmtOp[account.Account] {
	limit := c.fs.Int64("monthly-limit", 0, "queries per key and month; enterprise only, and required for it")
	var id int64
	var t account.Tier
	return mgmtOp[account.Account]{
		check: func(pos []string) (err error) {
			if id, err = mgmtAccountID(pos[0]); err != nil {
				return err
			}
			if t, err = account.ParseTier(pos[1]); err != nil {
				return usageError(err.Error())
			}
			return nil
		},
		call: func(ctx context.Context, svc *account.Service) (account.Account, error) {
			return svc.SetTier(ctx, id, t, *limit)
		},
		text: func(c *mgmtCmd, a account.Account) error {
			fmt.Fprintf(c.e.stdout, "Account %d %q is now %s: %s per key and month.\n", a.ID, a.Name, a.Tier, plural(a.MonthlyLimit, "query", "queries"))
			return nil
		},
	}
}
