package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
)

// runWith runs "ipatlas args..." on m's store with more environment
// variables.
func (m *mgmtEnv) runWith(vars map[string]string, args ...string) (string, string, error) {
	m.t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "IPATLAS_STORE" {
			return m.dsn
		}
		return vars[k]
	}
	err := run(m.t.Context(), append([]string{"ipatlas"}, args...), getenv, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// tokenOf is the token of a printed link.
func tokenOf(t *testing.T, link string) string {
	t.Helper()
	_, tok, ok := strings.Cut(link, account.PasswordPath)
	if !ok || len(tok) != 43 {
		t.Fatalf("link %q has no token after %s", link, account.PasswordPath)
	}
	return tok
}

const cliPassword = "a long and quiet evening walk"

func TestAccountsInvite(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "Owned", "--tier", "free")

	var l mgmtLink
	m.json(&l, "accounts", "invite", fmt.Sprint(id), "--email", "Ann@Example.com", "--public-url", "https://ip.example.com/")
	if l.Owner.Email != "ann@example.com" || l.Owner.AccountID != id || l.Purpose != account.TokenInvite ||
		!strings.HasPrefix(l.Link, "https://ip.example.com/account/password#token=") || l.ExpiresAt.IsZero() {
		t.Fatalf("accounts invite --json: %+v", l)
	}
	// The link works: the owner sets a password and signs in.
	svc := m.service()
	if _, _, err := svc.SetPassword(t.Context(), tokenOf(t, l.Link), cliPassword); err != nil {
		t.Fatalf("the printed link's token: %v", err)
	}
	if _, _, err := svc.SignIn(t.Context(), "ann@example.com", cliPassword); err != nil {
		t.Fatal(err)
	}

	// Without a public URL: the bare path, and a note on stderr.
	out, stderr, err := m.runWith(nil, "accounts", "invite", fmt.Sprint(id), "--email", "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "/account/password#token=") || !strings.Contains(out, "bob@example.com") {
		t.Fatalf("accounts invite without a public URL printed:\n%s", out)
	}
	if !strings.Contains(stderr, "prefix the link with the service's public address") {
		t.Fatalf("no note on stderr: %q", stderr)
	}

	// Flag, then environment, then config file.
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, []byte("public_url = \"https://file.example\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"IPATLAS_PUBLIC_URL": "https://env.example"}
	for _, c := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{nil, []string{"--config", cfg}, "https://file.example/account/"},
		{env, []string{"--config", cfg}, "https://env.example/account/"},
		{env, []string{"--config", cfg, "--public-url", "http://flag.example:8080"}, "http://flag.example:8080/account/"},
	} {
		args := append([]string{"accounts", "invite", fmt.Sprint(id), "--email", "bob@example.com", "--json"}, c.args...)
		out, stderr, err := m.runWith(c.vars, args...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		var l mgmtLink
		if err := json.Unmarshal([]byte(out), &l); err != nil || !strings.HasPrefix(l.Link, c.want) || stderr != "" {
			t.Fatalf("%v with %v: link %q (%v), stderr %q; want %s...", c.args, c.vars, l.Link, err, stderr, c.want)
		}
	}

	// Inviting an owner who has a password makes a reset link.
	m.json(&l, "accounts", "invite", fmt.Sprint(id), "--email", "ann@example.com")
	if l.Purpose != account.TokenReset {
		t.Fatalf("invite of an owner with a password: %+v", l)
	}

	other := m.createAccount("--name", "Other", "--tier", "free")
	m.fails(exitFailure, "accounts", "invite", fmt.Sprint(other), "--email", "ann@example.com")
	m.fails(exitNotFound, "accounts", "invite", "999", "--email", "c@example.com")
	m.fails(exitUsage, "accounts", "invite", fmt.Sprint(id))
	m.fails(exitUsage, "accounts", "invite", fmt.Sprint(id), "--email", "not an email")
	m.fails(exitUsage, "accounts", "invite", fmt.Sprint(id), "--email", "c@example.com", "--public-url", "ftp://x.example")
	m.fails(exitUsage, "accounts", "invite", fmt.Sprint(id), "--email", "c@example.com", "--public-url", "https://x.example/sub")
	m.fails(exitUsage, "accounts", "invite", "--email", "c@example.com")

	var os []account.Owner
	m.json(&os, "accounts", "owners", fmt.Sprint(id))
	if len(os) != 2 || os[0].Email != "ann@example.com" || !os[0].HasPassword || os[1].Email != "bob@example.com" || os[1].HasPassword {
		t.Fatalf("accounts owners --json: %+v", os)
	}
	out = m.ok("accounts", "owners", fmt.Sprint(id))
	if !strings.Contains(out, "ann@example.com") || !strings.Contains(out, "not set (invited)") {
		t.Fatalf("accounts owners:\n%s", out)
	}
	if out := m.ok("accounts", "owners", fmt.Sprint(other)); !strings.Contains(out, "No owners") {
		t.Fatalf("accounts owners of an account without: %q", out)
	}
	m.json(&os, "accounts", "owners", fmt.Sprint(other))
	if os == nil || len(os) != 0 {
		t.Fatalf("owners of an account without as JSON: %v, want []", os)
	}
	m.fails(exitNotFound, "accounts", "owners", "999")
}

func TestAccountsResetLink(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "R", "--tier", "free")
	var l mgmtLink
	m.json(&l, "accounts", "invite", fmt.Sprint(id), "--email", "rita@example.com")
	svc := m.service()
	if _, _, err := svc.SetPassword(t.Context(), tokenOf(t, l.Link), cliPassword); err != nil {
		t.Fatal(err)
	}
	out, _, err := m.runWith(map[string]string{"IPATLAS_PUBLIC_URL": "https://ip.example.org"}, "accounts", "reset-link", " RITA@example.com ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Password reset link for rita@example.com") || !strings.Contains(out, "\nhttps://ip.example.org/account/password#token=") {
		t.Fatalf("accounts reset-link:\n%s", out)
	}
	const newPassword = "another quiet evening walk"
	if _, _, err := svc.SetPassword(t.Context(), tokenOf(t, out[strings.LastIndex(out, "\nhttps")+1:len(out)-1]), newPassword); err != nil {
		t.Fatalf("the reset link's token: %v", err)
	}
	if _, _, err := svc.SignIn(t.Context(), "rita@example.com", newPassword); err != nil {
		t.Fatal(err)
	}
	m.fails(exitNotFound, "accounts", "reset-link", "nobody@example.com")
	m.fails(exitUsage, "accounts", "reset-link", "nobody")
	m.fails(exitUsage, "accounts", "reset-link")
}

func TestAccountsRequests(t *testing.T) {
	m := newMgmtEnv(t)
	a := m.createAccount("--name", "A", "--tier", "free")
	b := m.createAccount("--name", "B", "--tier", "free")
	svc := m.service()
	ra, err := svc.RequestTier(t.Context(), a, 0, account.Pro, 0, "more\nplease")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := svc.RequestTier(t.Context(), b, 0, account.Enterprise, 20000, "")
	if err != nil {
		t.Fatal(err)
	}
	if out := m.ok("accounts", "requests", "--status", "approved"); !strings.Contains(out, "No tier requests") {
		t.Fatalf("no approved requests yet: %q", out)
	}
	var rs []account.TierRequest
	m.json(&rs, "accounts", "requests", "--status", "pending")
	if len(rs) != 2 || rs[0].ID != rb.ID || rs[1].ID != ra.ID {
		t.Fatalf("pending requests: %+v", rs)
	}
	m.json(&rs, "accounts", "requests", "--account", fmt.Sprint(a))
	if len(rs) != 1 || rs[0].ID != ra.ID {
		t.Fatalf("account %d's requests: %+v", a, rs)
	}
	out := m.ok("accounts", "requests")
	if !strings.Contains(out, "more please") || !strings.Contains(out, "20000") || !strings.Contains(out, "pending") {
		t.Fatalf("accounts requests:\n%s", out)
	}

	if out := m.ok("accounts", "approve", fmt.Sprint(ra.ID)); !strings.Contains(out, fmt.Sprintf("account %d is now pro", a)) {
		t.Fatalf("accounts approve: %q", out)
	}
	var got account.TierRequest
	m.json(&got, "accounts", "refuse", fmt.Sprint(rb.ID))
	if got.Status != account.RequestRefused || got.DecidedAt == nil {
		t.Fatalf("accounts refuse --json: %+v", got)
	}
	var acct account.Account
	m.json(&acct, "accounts", "show", fmt.Sprint(a))
	if acct.Tier != account.Pro {
		t.Fatalf("after approval: %+v", acct)
	}
	m.json(&acct, "accounts", "show", fmt.Sprint(b))
	if acct.Tier != account.Free {
		t.Fatalf("after refusal: %+v", acct)
	}
	if _, err := m.fails(exitFailure, "accounts", "approve", fmt.Sprint(ra.ID)); !strings.Contains(err.Error(), "not pending") {
		t.Fatalf("approving twice: %v", err)
	}
	m.fails(exitNotFound, "accounts", "refuse", "999")
	m.fails(exitUsage, "accounts", "approve", "x")
	m.fails(exitUsage, "accounts", "approve")
	m.fails(exitUsage, "accounts", "requests", "--status", "maybe")
}

func TestAccountsAudit(t *testing.T) {
	m := newMgmtEnv(t)
	a := m.createAccount("--name", "Audited", "--tier", "free")
	b := m.createAccount("--name", "Other", "--tier", "free")
	m.ok("credits", "add", fmt.Sprint(a), "25", "--reason", "goodwill")
	k := m.createKey(a)
	m.ok("keys", "revoke", k.ID)
	m.ok("accounts", "invite", fmt.Sprint(a), "--email", "audit@example.com")
	m.ok("accounts", "set-tier", fmt.Sprint(b), "pro")

	var es []account.AuditEntry
	m.json(&es, "accounts", "audit", fmt.Sprint(a))
	var got []string
	for _, e := range es {
		got = append(got, e.Actor+" "+e.Action)
	}
	want := "cli owner.invite,cli key.revoke,cli key.create,cli credits.add,cli account.create"
	if strings.Join(got, ",") != want {
		t.Fatalf("accounts audit %d: %s; want %s", a, strings.Join(got, ","), want)
	}
	m.json(&es, "accounts", "audit")
	if len(es) != 7 || es[0].Action != "account.tier" || es[0].AccountID != b {
		t.Fatalf("accounts audit (all): %+v", es)
	}
	m.json(&es, "accounts", "audit", "--limit", "2", "--before", fmt.Sprint(es[1].ID))
	if len(es) != 2 || es[0].Action != "key.revoke" {
		t.Fatalf("accounts audit --limit 2 --before: %+v", es)
	}
	out := m.ok("accounts", "audit", fmt.Sprint(a), "--limit", "2")
	if !strings.Contains(out, "owner.invite") || !strings.Contains(out, "audit@example.com") ||
		!strings.Contains(out, "Older entries: add --before") || strings.Contains(out, "credits.add") {
		t.Fatalf("accounts audit --limit 2:\n%s", out)
	}
	out = m.ok("accounts", "audit", fmt.Sprint(a))
	if !strings.Contains(out, `"reason":"goodwill"`) || strings.Contains(out, "Older entries") {
		t.Fatalf("accounts audit:\n%s", out)
	}
	m.fails(exitNotFound, "accounts", "audit", "999")
	m.fails(exitUsage, "accounts", "audit", "1", "2")
	m.fails(exitUsage, "accounts", "audit", "--limit", "0")
	m.fails(exitUsage, "accounts", "audit", "--limit", "1001")
}
