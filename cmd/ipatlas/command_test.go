package main

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

// ipatlas --help lists every command on stdout, with the settings rule,
// and succeeds.
func TestRootHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		r := runCLI(t, newCLIEnv(t), "", arg)
		if r.err != nil || r.stderr != "" {
			t.Fatalf("%s: err %v, stderr %q", arg, r.err, r.stderr)
		}
		for _, c := range root.subs {
			if !strings.Contains(r.stdout, "\n  "+c.name+" ") {
				t.Errorf("%s: %q is not listed:\n%s", arg, c.name, r.stdout)
			}
		}
		for _, want := range []string{"usage: ipatlas <command>", "IPATLAS_CONFIG", "else its default"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: help lacks %q", arg, want)
			}
		}
	}
}

// A usage mistake is one line and where to read the help, on stderr, and
// exit code 2; nothing on stdout.
func TestUsageMistake(t *testing.T) {
	for _, tc := range []struct {
		args []string
		cmd  string
		want string
	}{
		{[]string{"lookup", "--bogus"}, "lookup", "--bogus"},
		{[]string{"lookup", "--local", "--bogus"}, "lookup --local", "--bogus"},
		{[]string{"keys", "create", "--bogus"}, "keys create", "--bogus"},
		{[]string{"keys", "create"}, "keys create", "--account is required"},
		{[]string{"keys", "nope"}, "keys", `unknown command "nope"`},
		{[]string{"db", "info", "extra"}, "db info", "takes no arguments"},
		{[]string{"serve", "--bogus"}, "serve", "--bogus"},
		{[]string{"bogus"}, "", `unknown command "bogus"`},
		{[]string{"lokup"}, "", `unknown command "lokup" (did you mean "lookup"?)`},
		{[]string{"accounts", "shwo"}, "accounts", `unknown command "shwo" (did you mean "show"?)`},
		{[]string{"accounts", "show"}, "accounts show", "accounts show: missing ACCOUNT_ID"},
		{[]string{"credits", "add", "1"}, "credits add", "credits add: missing AMOUNT"},
		{[]string{"credits", "add"}, "credits add", "credits add: missing ACCOUNT_ID and AMOUNT"},
		{[]string{"keys", "revoke", "1", "2"}, "keys revoke", `keys revoke: too many arguments: want KEY_ID, got ["1" "2"]`},
		{[]string{"accounts", "list", "x"}, "accounts list", `accounts list: takes no arguments, got ["x"]`},
	} {
		r := runCLI(t, newCLIEnv(t), "", tc.args...)
		hint := "see '" + strings.TrimSpace("ipatlas "+tc.cmd) + " --help'"
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != exitUsage || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || lines[1] != hint || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and two lines: %q, %q",
				tc.args, r.code, r.stdout, r.stderr, tc.want, hint)
		}
	}
}

// A bare program or group name lists its commands on stdout and succeeds:
// it is a question, not a mistake.
func TestBareNameListsCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		subs []*command
	}{
		{nil, root.subs},
		{[]string{"accounts"}, accountsCommand.subs},
		{[]string{"keys"}, keysCommand.subs},
	} {
		r := runCLI(t, newCLIEnv(t), "", tc.args...)
		if r.err != nil || r.code != 0 || r.stderr != "" {
			t.Fatalf("%q: exit %d, err %v, stderr %q", tc.args, r.code, r.err, r.stderr)
		}
		for _, c := range tc.subs {
			if !strings.Contains(r.stdout, "\n  "+c.name+" ") {
				t.Errorf("%q: %q is not listed:\n%s", tc.args, c.name, r.stdout)
			}
		}
	}
}

func TestNearest(t *testing.T) {
	for in, want := range map[string]string{
		"lokup": "lookup", "lookpu": "lookup", "serv": "serve", "acounts": "accounts",
		"vresion": "version", "x": "", "zzzzzz": "", "lookup-remote": "",
	} {
		if got := root.nearest(in); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPositionals(t *testing.T) {
	for synopsis, want := range map[string]string{
		usageAccountsShow:                "ACCOUNT_ID",
		usageAccountsSetTier:             "ACCOUNT_ID free|pro|enterprise",
		usageCreditsAdd:                  "ACCOUNT_ID AMOUNT",
		usageAccountsCreate:              "",
		usageAccountsRequests:            "",
		usageAccountsAudit:               "ACCOUNT_ID",
		"migrate [--store DSN] [--json]": "",
	} {
		if got := strings.Join(positionals(synopsis), " "); got != want {
			t.Errorf("positionals(%q) = %q, want %q", synopsis, got, want)
		}
	}
	// The management runner counts a command's arguments from its
	// synopsis: bracketed ones are optional.
	for synopsis, want := range map[string][2]int{
		usageAccountsShow:     {1, 1},
		usageAccountsSetTier:  {2, 2},
		usageAccountsCreate:   {0, 0},
		usageAccountsAudit:    {0, 1},
		usageCreditsHistory:   {1, 1},
		usageAccountsRequests: {0, 0},
		usageStoreBackup:      {1, 1},
	} {
		if least, most := arity(synopsis); least != want[0] || most != want[1] {
			t.Errorf("arity(%q) = %d, %d, want %d, %d", synopsis, least, most, want[0], want[1])
		}
	}
}

// The line names the program once, however deep the client's error is.
func TestErrorLine(t *testing.T) {
	inner := &ipatlas.Error{Code: ipatlas.CodeInvalidIP, Message: "Invalid IP address format"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{inner, "ipatlas: InvalidIP: Invalid IP address format"},
		{fmt.Errorf("lookup: 1 of 4 addresses failed; the first: %w", inner),
			"ipatlas: lookup: 1 of 4 addresses failed; the first: InvalidIP: Invalid IP address format"},
		{fmt.Errorf("myip: %w", &client.FamilyError{Family: "IPv6", Reason: "no route"}),
			"ipatlas: myip: IPv6 unavailable: no route"},
		{fmt.Errorf("myip: no address found: %w", errors.Join(
			&client.FamilyError{Family: "IPv4", Reason: "a"}, &client.FamilyError{Family: "IPv6", Reason: "b"})),
			"ipatlas: myip: no address found: IPv4 unavailable: a; IPv6 unavailable: b"},
	} {
		if got := errorLine(tc.err); got != tc.want {
			t.Errorf("errorLine(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// keys create --help shows its flags as --flag on stdout and succeeds.
func TestSubcommandHelp(t *testing.T) {
	r := runCLI(t, newCLIEnv(t), "", "keys", "create", "--help")
	if r.err != nil || r.stderr != "" {
		t.Fatalf("err %v, stderr %q", r.err, r.stderr)
	}
	for _, want := range []string{"usage: ipatlas keys create --account ACCOUNT_ID", "--account", "--store", "--json"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "-") && !strings.HasPrefix(f[0], "--") {
			t.Errorf("a flag shown with one dash: %q", line)
		}
	}
	// The group's help lists its subcommands.
	r = runCLI(t, newCLIEnv(t), "", "keys", "--help")
	for _, want := range []string{"create --account ACCOUNT_ID", "revoke KEY_ID", "rotate KEY_ID"} {
		if r.err != nil || !strings.Contains(r.stdout, want) {
			t.Errorf("keys --help: err %v, lacks %q:\n%s", r.err, want, r.stdout)
		}
	}
}

// ipatlas version and --version print the module and Go versions.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runCLI(t, newCLIEnv(t), "", args...)
		want := "ipatlas " + moduleVersion() + " " + runtime.Version()
		if r.err != nil || !strings.HasPrefix(r.stdout, want) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("%q: err %v, stdout %q; want a line starting %q", args, r.err, r.stdout, want)
		}
	}
	if r := runCLI(t, newCLIEnv(t), "", "version", "extra"); r.code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", r.code, exitUsage)
	}
}

// The version line names the release tag or the pseudo-version go build
// stamps, and the commit the build recorded; go run's "(devel)" reads
// "devel".
func TestVersionOfBuildInfo(t *testing.T) {
	for _, c := range []struct {
		main     string
		settings map[string]string
		version  string
		revision string
	}{
		{"(devel)", nil, "devel", ""},
		{"", nil, "devel", ""},
		{"v0.1.0", nil, "v0.1.0", ""},
		{"v0.1.1-0.20261207021500-8418abb0c0de", map[string]string{"vcs.revision": "8418abb0c0de5f1e2d3c4b5a69788796a5b4c3d2", "vcs.time": "2026-12-07T02:15:00Z", "vcs.modified": "false"},
			"v0.1.1-0.20261207021500-8418abb0c0de", "rev 8418abb0c0de 2026-12-07T02:15:00Z"},
		{"(devel)", map[string]string{"vcs.revision": "8418abb", "vcs.modified": "true"}, "devel", "rev 8418abb modified"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/ipatlas/ipatlas", Version: c.main}}
		for k, v := range c.settings {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		if v, r := versionOf(bi), revisionOf(bi); v != c.version || r != c.revision {
			t.Errorf("%q %v: version %q revision %q, want %q %q", c.main, c.settings, v, r, c.version, c.revision)
		}
	}
}

// Flags mix with arguments; a negative number is an argument unless it is
// a flag of the command (myip -4).
func TestParseArgsNumbers(t *testing.T) {
	r := runCLI(t, newCLIEnv(t), "", "myip", "-4", "-6", "--url", "http://127.0.0.1:1", "--bogus")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--bogus") {
		t.Errorf("myip -4 -6 --bogus: exit %d, stderr %q", r.code, r.stderr)
	}
}
