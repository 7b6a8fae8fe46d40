package main

// The account commands of the portal's side: owners and their one-time
// links, tier requests, and the audit log.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

const (
	usageAccountsInvite    = "invite ACCOUNT_ID --email EMAIL [--public-url URL]"
	usageAccountsOwners    = "owners ACCOUNT_ID"
	usageAccountsResetLink = "reset-link EMAIL [--public-url URL]"
	usageAccountsRequests  = "requests [--status pending|approved|refused] [--account ACCOUNT_ID]"
	usageAccountsApprove   = "approve REQUEST_ID"
	usageAccountsRefuse    = "refuse REQUEST_ID"
	usageAccountsAudit     = "audit [ACCOUNT_ID] [--limit N] [--before ENTRY_ID]"
)

// mgmtConfigKeys are the config file's keys of the management commands.
var mgmtConfigKeys = []string{"public-url"}

// mgmtLink is the JSON of a one-time link, as the admin API gives it.
type mgmtLink struct {
	Owner     account.Owner `json:"owner"`
	Purpose   string        `json:"purpose"`
	Link      string        `json:"link"`
	ExpiresAt time.Time     `json:"expires_at"`
}

// addPublicURL adds --public-url to a command that prints links.
func addPublicURL(c *mgmtCmd) *string {
	return c.fs.String("public-url", "", "the service's public address as browsers reach it, e.g. https://ip.example.com, the base of the link (env IPATLAS_PUBLIC_URL, config key public_url)")
}

// publicURL is --public-url, else IPATLAS_PUBLIC_URL, else the config
// file's public_url, else "" (links are bare paths).
func (c *mgmtCmd) publicURL(flagVal string) (string, error) {
	file, err := loadConfig(c.config, c.e.getenv, c.e.stderr)
	if err != nil {
		return "", err
	}
	v := file.value(c.e.getenv, flagVal, "public-url", "")
	if v == "" {
		return "", nil
	}
	base, err := parsePublicURL(v)
	if err != nil {
		return "", usageError(fmt.Sprintf("public URL %q: %v", v, err))
	}
	return base, nil
}

// parsePublicURL checks the public listener's address as browsers reach
// it (an http or https origin, a trailing slash allowed) and returns it
// without the slash, ready to prefix a path.
func parsePublicURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("want an http or https URL without a path, e.g. https://ip.example.com")
	}
	return strings.TrimRight(v, "/"), nil
}

// printLink prints a one-time link: the full URL when the public address
// is known, else the path with a note on stderr.
func (c *mgmtCmd) printLink(l account.Link, base, what string) error {
	link := base + l.Path()
	if base == "" {
		fmt.Fprintln(c.e.stderr, "ipatlas: note: no public URL is set (--public-url, IPATLAS_PUBLIC_URL or public_url in the config file): prefix the link with the service's public address before passing it on")
	}
	if c.json {
		return c.printJSON(mgmtLink{Owner: l.Owner, Purpose: l.Purpose, Link: link, ExpiresAt: l.ExpiresAt})
	}
	fmt.Fprintf(c.e.stdout, "%s for %s (account %d, owner %d). The link works once, until %s; pass it on to the owner:\n",
		what, l.Owner.Email, l.Owner.AccountID, l.Owner.ID, mgmtTime(l.ExpiresAt))
	fmt.Fprintln(c.e.stdout, link)
	return nil
}

func runAccountsInvite(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts invite", usageAccountsInvite)
	email := c.fs.String("email", "", "the owner's email, their sign-in name (required)")
	pub := addPublicURL(c)
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	id, err := mgmtAccountID(pos[0])
	if err != nil {
		return err
	}
	if strings.TrimSpace(*email) == "" {
		return usageError("accounts invite: --email is required")
	}
	base, err := c.publicURL(*pub)
	if err != nil {
		return err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	l, err := svc.Invite(ctx, id, *email)
	if err != nil {
		return err
	}
	what := "Invitation"
	if l.Purpose == account.TokenReset {
		what = "Password reset link (the owner has a password already)"
	}
	return c.printLink(l, base, what)
}

func runAccountsResetLink(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts reset-link", usageAccountsResetLink)
	pub := addPublicURL(c)
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	base, err := c.publicURL(*pub)
	if err != nil {
		return err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	o, err := svc.OwnerByEmail(ctx, pos[0])
	if err != nil {
		return err
	}
	l, err := svc.ResetLink(ctx, o.ID)
	if err != nil {
		return err
	}
	return c.printLink(l, base, "Password reset link")
}

func runAccountsOwners(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts owners", usageAccountsOwners)
	id, svc, done, err := c.openAccount(ctx, args)
	if err != nil {
		return err
	}
	defer done()
	os, err := svc.Owners(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(os)
	}
	if len(os) == 0 {
		fmt.Fprintf(e.stdout, "No owners. Invite one with: ipatlas accounts invite %d --email EMAIL\n", id)
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "ID\tEMAIL\tPASSWORD\tCREATED")
	for _, o := range os {
		pw := "not set (invited)"
		if o.HasPassword {
			pw = "set"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", o.ID, o.Email, pw, mgmtTime(o.CreatedAt))
	}
	return tw.Flush()
}

func runAccountsRequests(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts requests", usageAccountsRequests)
	status := c.fs.String("status", "", "only requests with this status: pending, approved or refused (default: all)")
	acct := c.fs.Int64("account", 0, "only this account's requests")
	if _, err := c.parse(args, 0); err != nil {
		return err
	}
	switch *status {
	case "", account.RequestPending, account.RequestApproved, account.RequestRefused:
	default:
		return usageError(fmt.Sprintf("accounts requests: unknown status %q (want pending, approved or refused)", *status))
	}
	if *acct < 0 {
		return usageError("accounts requests: --account must be a positive account ID")
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	rs, err := svc.TierRequests(ctx, *acct, *status)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(rs)
	}
	if len(rs) == 0 {
		fmt.Fprintln(e.stdout, "No tier requests.")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "ID\tACCOUNT\tTIER\tLIMIT/KEY/MONTH\tSTATUS\tCREATED\tDECIDED\tNOTE")
	for _, r := range rs {
		decided := "-"
		if r.DecidedAt != nil {
			decided = mgmtTime(*r.DecidedAt)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.AccountID, r.Tier, account.Limit(r.Tier, r.MonthlyLimit),
			r.Status, mgmtTime(r.CreatedAt), decided, oneLine(r.Note))
	}
	return tw.Flush()
}

func runAccountsApprove(ctx context.Context, e env, args []string) error {
	return decideRequest(ctx, e, args, "accounts approve", usageAccountsApprove, true)
}

func runAccountsRefuse(ctx context.Context, e env, args []string) error {
	return decideRequest(ctx, e, args, "accounts refuse", usageAccountsRefuse, false)
}

func decideRequest(ctx context.Context, e env, args []string, name, usage string, approve bool) error {
	c := newMgmtCmd(e, name, usage)
	pos, err := c.parse(args, 1)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		return usageError(fmt.Sprintf("%q is not a tier request ID (a positive number; see 'ipatlas accounts requests')", pos[0]))
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	r, err := svc.DecideTierRequest(ctx, id, approve)
	if errors.Is(err, account.ErrConflict) {
		return fmt.Errorf("%w (see 'ipatlas accounts requests')", err)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(r)
	}
	if approve {
		fmt.Fprintf(e.stdout, "Approved tier request %d: account %d is now %s, %s per key and month.\n",
			r.ID, r.AccountID, r.Tier, plural(account.Limit(r.Tier, r.MonthlyLimit), "query", "queries"))
	} else {
		fmt.Fprintf(e.stdout, "Refused tier request %d of account %d (for %s).\n", r.ID, r.AccountID, r.Tier)
	}
	return nil
}

func runAccountsAudit(ctx context.Context, e env, args []string) error {
	c := newMgmtCmd(e, "accounts audit", usageAccountsAudit)
	limit := c.fs.Int("limit", 50, "at most N entries, 1 to 1000")
	before := c.fs.Int64("before", 0, "only entries older than this entry ID, for the next page")
	pos, err := c.parseRange(args, 0, 1)
	if err != nil {
		return err
	}
	var id int64
	if len(pos) == 1 {
		if id, err = mgmtAccountID(pos[0]); err != nil {
			return err
		}
	}
	if *limit < 1 || *limit > 1000 {
		return usageError("accounts audit: --limit must be between 1 and 1000")
	}
	if *before < 0 {
		return usageError("accounts audit: --before must be an entry ID")
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return err
	}
	defer done()
	if id != 0 {
		if _, err := svc.Account(ctx, id); err != nil {
			return err
		}
	}
	es, err := svc.AuditLog(ctx, id, *before, *limit)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(es)
	}
	if len(es) == 0 {
		fmt.Fprintln(e.stdout, "No audit entries.")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "ID\tTIME\tACTOR\tACTION\tACCOUNT\tTARGET\tDETAIL")
	for _, a := range es {
		acct := "-"
		if a.AccountID != 0 {
			acct = strconv.FormatInt(a.AccountID, 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, mgmtTime(a.At), a.Actor, a.Action, acct, a.Target, oneLine(a.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(es) == *limit {
		fmt.Fprintf(e.stdout, "Older entries: add --before %d\n", es[len(es)-1].ID)
	}
	return nil
}
