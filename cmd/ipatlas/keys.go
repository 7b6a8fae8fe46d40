package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ipatlas/ipatlas/internal/account"
)

const (
	usageKeysCreate = "create --account ACCOUNT_ID"
	usageKeysList   = "list --account ACCOUNT_ID"
	usageKeysRevoke = "revoke KEY_ID"
	usageKeysRotate = "rotate KEY_ID"
)

// keysCommand manages API keys. A key's secret is printed once, when it
// is created or rotated; the store keeps only its hash.
var keysCommand = mgmtGroup("keys", "manage API keys",
	mgmtSub(usageKeysCreate, "create a key for an account; its secret is printed once", runKeysCreate),
	mgmtSub(usageKeysList, "list an account's keys and their usage", runKeysList),
	mgmtSub(usageKeysRevoke, "revoke a key", runKeysRevoke),
	mgmtSub(usageKeysRotate, "give a key a new secret, keeping its ID and usage", runKeysRotate),
)

func mgmtAccountFlag(c *mgmtCmd) *string {
	return c.fs.String("account", "", "the account's `ID` (required)")
}

func mgmtRequiredAccount(c *mgmtCmd, v string) (int64, error) {
	if v == "" {
		return 0, usageError(c.fs.Name() + ": --account is required")
	}
	return mgmtAccountID(v)
}

// mgmtPrintSecret shows a new secret once, set apart so it is easy to copy.
func mgmtPrintSecret(w io.Writer, what string, nk account.NewKey) {
	fmt.Fprintf(w, "%s key %s of account %d. Its secret is shown only this once; store it now:\n\n", what, nk.ID, nk.AccountID)
	fmt.Fprintf(w, "    %s\n\n", nk.Secret)
	fmt.Fprintf(w, "Use it as: Authorization: Bearer <secret>\n")
}

func runKeysCreate(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "keys create", usageKeysCreate)
	acct := mgmtAccountFlag(c)
	if _, err := c.parse(args, 0); err != nil {
		return err
	}
	id, err := mgmtRequiredAccount(c, *acct)
	if err != nil {
		return err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	nk, err := svc.CreateKey(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(nk)
	}
	mgmtPrintSecret(e.stdout, "Created", nk)
	return nil
}

func runKeysList(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "keys list", usageKeysList)
	acct := mgmtAccountFlag(c)
	if _, err := c.parse(args, 0); err != nil {
		return err
	}
	id, err := mgmtRequiredAccount(c, *acct)
	if err != nil {
		return err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	a, kv, err := mgmtAccountKeys(ctx, svc, id)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(kv)
	}
	return mgmtPrintKeys(c, kv, a.MonthlyLimit)
}

func runKeysRevoke(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "keys revoke", usageKeysRevoke)
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	k, err := svc.RevokeKey(ctx, pos[0])
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(k)
	}
	fmt.Fprintf(e.stdout, "Revoked key %s of account %d at %s. It no longer works.\n", k.ID, k.AccountID, mgmtTime(*k.RevokedAt))
	return nil
}

func runKeysRotate(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "keys rotate", usageKeysRotate)
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	nk, err := svc.RotateKey(ctx, pos[0])
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(nk)
	}
	mgmtPrintSecret(e.stdout, "Rotated", nk)
	fmt.Fprintln(e.stdout, "The old secret no longer works; the key keeps its ID and this month's usage.")
	return nil
}
