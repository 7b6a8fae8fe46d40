package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas/internal/account"
)

const (
	usageKeysCreate = "create --account ACCOUNT_ID"
	usageKeysList   = "list --account ACCOUNT_ID"
	usageKeysRevoke = "revoke KEY_ID"
	usageKeysRotate = "rotate KEY_ID"
)

// minKeyRef is the fewest characters of a key ID that may name a key.
const minKeyRef = 4

// keysCommand manages API keys. A key's secret is printed once, when it
// is created or rotated; the store keeps only its hash.
var keysCommand = mgmtGroup("keys", "manage API keys",
	mgmtSub(usageKeysCreate, "create a key for an account; its secret is printed once", keysCreate),
	mgmtSub(usageKeysList, "list an account's keys and their usage", keysList),
	mgmtSub(usageKeysRevoke, "revoke a key, named by its ID or prefix as 'keys list' shows it", keysRevoke),
	mgmtSub(usageKeysRotate, "give a key a new secret, keeping its ID and usage", keysRotate),
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

func keysCreate(c *mgmtCmd) mgmtOp[account.NewKey] {
	acct := mgmtAccountFlag(c)
	var id int64
	return mgmtOp[account.NewKey]{
		check: func([]string) (err error) {
			id, err = mgmtRequiredAccount(c, *acct)
			return err
		},
		call: func(ctx context.Context, svc *account.Service) (account.NewKey, error) {
			return svc.CreateKey(ctx, id)
		},
		text: func(c *mgmtCmd, nk account.NewKey) error {
			mgmtPrintSecret(c.e.stdout, "Created", nk)
			return nil
		},
	}
}

// mgmtKeysList is an account's keys and the limit they share.
type mgmtKeysList struct {
	keys  []mgmtKeyView
	limit int64
}

func keysList(c *mgmtCmd) mgmtOp[mgmtKeysList] {
	acct := mgmtAccountFlag(c)
	var id int64
	return mgmtOp[mgmtKeysList]{
		check: func([]string) (err error) {
			id, err = mgmtRequiredAccount(c, *acct)
			return err
		},
		call: func(ctx context.Context, svc *account.Service) (mgmtKeysList, error) {
			a, kv, err := mgmtAccountKeys(ctx, svc, id)
			return mgmtKeysList{kv, a.MonthlyLimit}, err
		},
		json: func(l mgmtKeysList) any { return l.keys },
		text: func(c *mgmtCmd, l mgmtKeysList) error { return mgmtPrintKeys(c, l.keys, l.limit) },
	}
}

func keysRevoke(c *mgmtCmd) mgmtOp[account.Key] {
	var ref string
	return mgmtOp[account.Key]{
		check: func(pos []string) error { ref = pos[0]; return nil },
		call: func(ctx context.Context, svc *account.Service) (account.Key, error) {
			id, err := mgmtKeyID(ctx, svc, ref)
			if err != nil {
				return account.Key{}, err
			}
			return svc.RevokeKey(ctx, id)
		},
		text: func(c *mgmtCmd, k account.Key) error {
			fmt.Fprintf(c.e.stdout, "Revoked key %s of account %d at %s. It no longer works.\n", k.ID, k.AccountID, mgmtTime(*k.RevokedAt))
			return nil
		},
	}
}

func keysRotate(c *mgmtCmd) mgmtOp[account.NewKey] {
	var ref string
	return mgmtOp[account.NewKey]{
		check: func(pos []string) error { ref = pos[0]; return nil },
		call: func(ctx context.Context, svc *account.Service) (account.NewKey, error) {
			id, err := mgmtKeyID(ctx, svc, ref)
			if err != nil {
				return account.NewKey{}, err
			}
			return svc.RotateKey(ctx, id)
		},
		text: func(c *mgmtCmd, nk account.NewKey) error {
			mgmtPrintSecret(c.e.stdout, "Rotated", nk)
			fmt.Fprintln(c.e.stdout, "The old secret no longer works; the key keeps its ID and this month's usage.")
			return nil
		},
	}
}

// mgmtKeyID is the ID of the key that ref names, as 'keys list' shows
// keys: the ID ("AbC123xyz789"), the prefix ("ipa_AbC123xyz789", with or
// without the listing's "…"), or the start of either, of at least
// minKeyRef characters of the ID, when exactly one key's ID starts so.
// A start that several keys share is refused with their IDs; a secret is
// refused without being echoed.
func mgmtKeyID(ctx context.Context, svc *account.Service, ref string) (string, error) {
	id := strings.TrimSpace(ref)
	id = strings.TrimSuffix(strings.TrimSuffix(id, "…"), "...")
	id = strings.TrimPrefix(id, account.KeyPrefix(""))
	if strings.Contains(id, "_") {
		return "", usageError("that looks like a key's secret: name the key by its ID or prefix as 'ipatlas keys list' shows it " +
			"(and keep secrets off command lines, which others can see)")
	}
	isAlnum := func(r rune) bool { return r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) }
	switch {
	case id == "" || len(id) > account.KeyIDLen || strings.ContainsFunc(id, func(r rune) bool { return !isAlnum(r) }):
		return "", usageError(fmt.Sprintf("%q is not a key: give its ID or prefix as 'ipatlas keys list' shows it (%s and %d letters and digits)",
			ref, account.KeyPrefix(""), account.KeyIDLen))
	case len(id) == account.KeyIDLen:
		return id, nil
	case len(id) < minKeyRef:
		return "", usageError(fmt.Sprintf("%q is too short to name a key: give at least %d characters of its ID", ref, minKeyRef))
	}
	// A shortened ID: the keys of every account are read, as an operator
	// would look them up with 'keys list'.
	as, err := svc.Accounts(ctx)
	if err != nil {
		return "", err
	}
	var found []account.Key
	for _, a := range as {
		ks, err := svc.Keys(ctx, a.ID)
		if err != nil {
			return "", err
		}
		for _, k := range ks {
			if strings.HasPrefix(k.ID, id) {
				found = append(found, k)
			}
		}
	}
	switch len(found) {
	case 0:
		return "", &exitError{code: exitNotFound, err: fmt.Errorf("no key's ID starts with %s", id)}
	case 1:
		return found[0].ID, nil
	}
	names := make([]string, len(found))
	for i, k := range found {
		names[i] = fmt.Sprintf("%s (account %d)", k.ID, k.AccountID)
	}
	return "", usageError(fmt.Sprintf("%q names %d keys: %s; give more of the ID", ref, len(found), strings.Join(names, ", ")))
}
