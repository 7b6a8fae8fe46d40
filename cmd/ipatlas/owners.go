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

// linkOp is what the commands that make a one-time link share: it is
// printed as the full URL when the public address (base) is known, else
// as the path with a note on stderr; what names it in the text.
func linkOp(c *mgmtCmd, base *string, check func(pos []string) error, call func(ctx context.Context, svc *account.Service) (account.Link, error), what func(account.Link) string) mgmtOp[account.Link] {
	return mgmtOp[account.Link]{
		check: check,
		call: func(ctx context.Context, svc *account.Service) (account.Link, error) {
			l, err := call(ctx, svc)
			if err == nil && *base == "" {
				fmt.Fprintln(c.e.stderr, "ipatlas: note: no public URL is set (--public-url, IPATLAS_PUBLIC_URL or public_url in the config file): prefix the link with the service's public address before passing it on")
			}
			return l, err
		},
		json: func(l account.Link) any {
			return mgmtLink{Owner: l.Owner, Purpose: l.Purpose, Link: *base + l.Path(), ExpiresAt: l.ExpiresAt}
		},
		text: func(c *mgmtCmd, l account.Link) error {
			fmt.Fprintf(c.e.stdout, "%s for %s (account %d, owner %d). The link works once, until %s; pass it on to the owner:\n",
				what(l), l.Owner.Email, l.Owner.AccountID, l.Owner.ID, mgmtTime(l.ExpiresAt))
			fmt.Fprintln(c.e.stdout, *base+l.Path())
			return nil
		},
	}
}

func accountsInvite(c *mgmtCmd) mgmtOp[account.Link] {
	email := c.fs.String("email", "", "the owner's email, their sign-in name (required)")
	pub := addPublicURL(c)
	var id int64
	var base string
	check := func(pos []string) (err error) {
		if id, err = mgmtAccountID(pos[0]); err != nil {
			return err
		}
		if strings.TrimSpace(*email) == "" {
			return usageError("accounts invite: --email is required")
		}
		base, err = c.publicURL(*pub)
		return err
	}
	call := func(ctx context.Context, svc *account.Service) (account.Link, error) {
		return svc.Invite(ctx, id, *email)
	}
	return linkOp(c, &base, check, call, func(l account.Link) string {
		if l.Purpose == account.TokenReset {
			return "Password reset link (the owner has a password already)"
		}
		return "Invitation"
	})
}

func accountsResetLink(c *mgmtCmd) mgmtOp[account.Link] {
	pub := addPublicURL(c)
	var email, base string
	check := func(pos []string) (err error) {
		email = pos[0]
		base, err = c.publicURL(*pub)
		return err
	}
	call := func(ctx context.Context, svc *account.Service) (account.Link, error) {
		o, err := svc.OwnerByEmail(ctx, email)
		if err != nil {
			return account.Link{}, err
		}
		return svc.ResetLink(ctx, o.ID)
	}
	return linkOp(c, &base, check, call, func(account.Link) string { return "Password reset link" })
}

func accountsOwners(c *mgmtCmd) mgmtOp[[]account.Owner] {
	var id int64
	return mgmtOp[[]account.Owner]{
		check: func(pos []string) (err error) {
			id, err = mgmtAccountID(pos[0])
			return err
		},
		call: func(ctx context.Context, svc *account.Service) ([]account.Owner, error) {
			return svc.Owners(ctx, id)
		},
		text: func(c *mgmtCmd, os []account.Owner) error {
			if len(os) == 0 {
				fmt.Fprintf(c.e.stdout, "No owners. Invite one with: ipatlas accounts invite %d --email EMAIL\n", id)
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
		},
	}
}

func accountsRequests(c *mgmtCmd) mgmtOp[[]account.TierRequest] {
	status := c.fs.String("status", "", "only requests with this status: pending, approved or refused (default: all)")
	acct := c.fs.Int64("account", 0, "only this account's requests")
	return mgmtOp[[]account.TierRequest]{
		check: func([]string) error {
			switch *status {
			case "", account.RequestPending, account.RequestApproved, account.RequestRefused:
			default:
				return usageError(fmt.Sprintf("accounts requests: unknown status %q (want pending, approved or refused)", *status))
			}
			if *acct < 0 {
				return usageError("accounts requests: --account must be a positive account ID")
			}
			return nil
		},
		call: func(ctx context.Context, svc *account.Service) ([]account.TierRequest, error) {
			return svc.TierRequests(ctx, *acct, *status)
		},
		text: func(c *mgmtCmd, rs []account.TierRequest) error {
			if len(rs) == 0 {
				fmt.Fprintln(c.e.stdout, "No tier requests.")
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
		},
	}
}

func accountsApprove(c *mgmtCmd) mgmtOp[account.TierRequest] { return decideRequest(true) }

func accountsRefuse(c *mgmtCmd) mgmtOp[account.TierRequest] { return decideRequest(false) }

func decideRequest(approve bool) mgmtOp[account.TierRequest] {
	var id int64
	return mgmtOp[account.TierRequest]{
		check: func(pos []string) (err error) {
			id, err = strconv.ParseInt(pos[0], 10, 64)
			if err != nil || id <= 0 {
				return usageError(fmt.Sprintf("%q is not a tier request ID (a positive number; see 'ipatlas accounts requests')", pos[0]))
			}
			return nil
		},
		call: func(ctx context.Context, svc *account.Service) (account.TierRequest, error) {
			r, err := svc.DecideTierRequest(ctx, id, approve)
			if errors.Is(err, account.ErrConflict) {
				return r, fmt.Errorf("%w (see 'ipatlas accounts requests')", err)
			}
			return r, err
		},
		text: func(c *mgmtCmd, r account.TierRequest) error {
			if approve {
				fmt.Fprintf(c.e.stdout, "Approved tier request %d: account %d is now %s, %s per key and month.\n",
					r.ID, r.AccountID, r.Tier, plural(account.Limit(r.Tier, r.MonthlyLimit), "query", "queries"))
			} else {
				fmt.Fprintf(c.e.stdout, "Refused tier request %d of account %d (for %s).\n", r.ID, r.AccountID, r.Tier)
			}
			return nil
		},
	}
}

func accountsAudit(c *mgmtCmd) mgmtOp[[]account.AuditEntry] {
	limit := c.fs.Int("limit", 50, "at most N entries, 1 to 1000")
	before := c.fs.Int64("before", 0, "only entries older than this entry ID, for the next page")
	var id int64
	return mgmtOp[[]account.AuditEntry]{
		check: func(pos []string) (err error) {
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
			return nil
		},
		call: func(ctx context.Context, svc *account.Service) ([]account.AuditEntry, error) {
			if id != 0 {
				if _, err := svc.Account(ctx, id); err != nil {
					return nil, err
				}
			}
			return svc.AuditLog(ctx, id, *before, *limit)
		},
		text: func(c *mgmtCmd, es []account.AuditEntry) error {
			if len(es) == 0 {
				fmt.Fprintln(c.e.stdout, "No audit entries.")
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
				fmt.Fprintf(c.e.stdout, "Older entries: add --before %d\n", es[len(es)-1].ID)
			}
			return nil
		},
	}
}
