package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/rdns/rdnstest"
)

// An example of the README is a console block: each "$ " line (with "\"
// continuing it) is a command as a user types it, and the lines under it
// are what it prints, where "..." stands for any text. A command that
// shows no lines prints nothing.
type example struct {
	line int    // the command's line in the README
	cmd  string // the command, continuations joined
	want []string
}

// readmeExamples reads every console block of the README in order.
func readmeExamples(t *testing.T, path string) []example {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	var cont bool
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```console":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in, cont = false, false
		case in && cont:
			e := &out[len(out)-1]
			e.cmd += " " + strings.TrimSpace(strings.TrimSuffix(line, "\\"))
			cont = strings.HasSuffix(line, "\\")
		case in && strings.HasPrefix(line, "$ "):
			cmd := strings.TrimPrefix(line, "$ ")
			cont = strings.HasSuffix(cmd, "\\")
			out = append(out, example{line: n, cmd: strings.TrimSuffix(cmd, "\\")})
		case in:
			if len(out) == 0 {
				t.Fatalf("%s:%d: output before any command in a console block", path, n)
			}
			e := &out[len(out)-1]
			e.want = append(e.want, line)
		}
	}
	if in {
		t.Fatalf("%s: a console block is not closed", path)
	}
	return out
}

// shellWords splits a command as a POSIX shell would for the README's
// examples: words apart by blanks, '...' taken literally, "..." and bare
// words with $NAME and ${NAME} expanded from vars, and an unquoted #
// starting a comment.
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	expand := func(i int) int { // s[i] == '$'; returns the index after the name
		j := i + 1
		braced := j < len(s) && s[j] == '{'
		if braced {
			j++
		}
		k := j
		for k < len(s) && (s[k] == '_' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= 'a' && s[k] <= 'z' || s[k] >= '0' && s[k] <= '9') {
			k++
		}
		if k == j {
			cur.WriteByte('$')
			return i + 1
		}
		cur.WriteString(vars[s[j:k]])
		if braced && k < len(s) && s[k] == '}' {
			k++
		}
		return k
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			i++
		case c == '#' && !inWord:
			i = len(s)
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errUnclosed
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case c == '"':
			inWord = true
			i++
			for {
				if i >= len(s) {
					return nil, errUnclosed
				}
				if s[i] == '"' {
					i++
					break
				}
				if s[i] == '$' {
					i = expand(i)
					continue
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`, s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
				i++
			}
		case c == '$':
			inWord = true
			i = expand(i)
		default:
			inWord = true
			cur.WriteByte(c)
			i++
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var errUnclosed = errors.New("a quote is not closed")

// curl does what curl does with the README's flags: -s, -H, -d (which
// makes a POST with curl's form type unless a Content-Type is given),
// -u USER:PASSWORD, -X METHOD. localhost:8080 is the server under test.
func curl(t *testing.T, args []string, public string) (string, error) {
	t.Helper()
	method, body, target := "", "", ""
	var user *url.Userinfo
	hdr := http.Header{}
	hasData := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			i++
			if i >= len(args) {
				t.Fatalf("curl %s: no value", a)
			}
			return args[i]
		}
		switch a {
		case "-s", "-S", "-sS":
		case "-H":
			k, v, _ := strings.Cut(next(), ":")
			hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case "-d", "--data":
			body, hasData = next(), true
		case "-X":
			method = next()
		case "-u":
			name, pass, _ := strings.Cut(next(), ":")
			user = url.UserPassword(name, pass)
		default:
			if strings.HasPrefix(a, "-") {
				t.Fatalf("curl: the README's examples use no %s (this test knows -s -H -d -u -X)", a)
			}
			target = a
		}
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	if u.Host != "localhost:8080" {
		t.Fatalf("curl %s: the README's examples ask localhost:8080", target)
	}
	u.Host = public
	if method == "" {
		method = http.MethodGet
		if hasData {
			method = http.MethodPost
		}
	}
	if hasData && hdr.Get("Content-Type") == "" {
		hdr.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req, err := http.NewRequest(method, u.String(), strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header = hdr
	req.Header.Set("User-Agent", "curl/8.5.0")
	if user != nil {
		p, _ := user.Password()
		req.SetBasicAuth(user.Username(), p)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// matches reports whether got is want, where "..." in want stands for any
// text, lines compared with their surrounding blanks trimmed and joined
// (so that a long JSON answer may be wrapped in the README).
func matches(want []string, got string) bool {
	join := func(lines []string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(strings.TrimSpace(l))
		}
		return b.String()
	}
	parts := strings.Split(join(want), "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re := regexp.MustCompile("(?s)^" + strings.Join(parts, ".*") + "$")
	return re.MatchString(join(strings.Split(strings.TrimRight(got, "\n"), "\n")))
}

// TestREADMEExamples runs every example of the README, in order, against
// a running server on the test dataset (8.8.8.8 is Google's Mountain View),
// its store and its data dir, with a DNS server that knows 8.8.8.8's name,
// and holds each to the output the README shows.
func TestREADMEExamples(t *testing.T) {
	examples := readmeExamples(t, "../../README.md")
	if len(examples) < 20 {
		t.Fatalf("the README has %d examples in console blocks; its examples are expected there", len(examples))
	}
	fx := newServeFixture(t)
	zone := rdnstest.New(t, "8.8.8.8.in-addr.arpa. 300 IN PTR dns.google.", "dns.google. 300 IN A 8.8.8.8")
	storePath := filepath.Join(fx.dir, "ipatlas.db")
	s := startServe(t, nil, serveArgs(fx.dir, storePath, "--resolver", zone.Addr)...)
	key := keyRe.FindString(s.stdout.String())
	if key == "" {
		t.Fatalf("no key in the first run's output:\n%s", s.stdout)
	}
	home := t.TempDir()
	vars := map[string]string{
		"KEY":              key,
		"IPATLAS_URL":      "http://" + s.public,
		"IPATLAS_API_KEY":  key,
		"IPATLAS_DATA_DIR": fx.dir,
		"IPATLAS_STORE":    "sqlite:" + storePath,
		"HOME":             home,
		"XDG_CACHE_HOME":   filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME":  filepath.Join(home, ".config"),
	}
	set := map[string]bool{} // what the test sets, which the README's own assignments leave alone
	for k := range vars {
		set[k] = true
	}
	assign := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	// Files the examples name are made in a directory of their own.
	t.Chdir(t.TempDir())
	for _, e := range examples {
		words, err := shellWords(e.cmd, vars)
		if err != nil || len(words) == 0 {
			t.Fatalf("README.md:%d: %q does not parse as a command: %v", e.line, e.cmd, err)
		}
		if words[0] == "export" {
			words = words[1:]
		}
		if assign.MatchString(words[0]) {
			for _, w := range words {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					t.Fatalf("README.md:%d: %q mixes assignments and a command", e.line, e.cmd)
				}
				if !set[k] {
					vars[k] = v
				}
			}
			if len(e.want) > 0 {
				t.Errorf("README.md:%d: an assignment shows output", e.line)
			}
			continue
		}
		var got string
		switch words[0] {
		case "curl":
			got, err = curl(t, words[1:], s.public)
		case "ipatlas":
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err = run(ctx, words, withTestSource(vars), strings.NewReader(""), &out, &out)
			cancel()
			got = out.String()
			if err != nil {
				got += "error: " + err.Error()
			}
			err = nil
		default:
			t.Fatalf("README.md:%d: %q: the test runs curl and ipatlas commands only", e.line, e.cmd)
		}
		if err != nil {
			t.Errorf("README.md:%d: %s: %v", e.line, e.cmd, err)
			continue
		}
		t.Logf("README.md:%d: $ %s\n%s", e.line, e.cmd, got)
		if !matches(e.want, got) {
			t.Errorf("README.md:%d: %s\nprinted:\n%s\nthe README shows:\n%s", e.line, e.cmd, got, strings.Join(e.want, "\n"))
		}
	}
}
