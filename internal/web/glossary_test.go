package web

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Chinese pages keep two words apart that an English reader keeps
// apart: credits (the balance a query is paid from) are 积分, and the
// monthly quota (the limit of queries per key) is 额度. A string that
// names one must not use the other's word, and the older variants 限额 and
// 配额 are gone, so that a reader never mistakes a balance for a limit.
func TestChineseGlossary(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "web", "src", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources: %v", err)
	}
	entry := regexp.MustCompile(`^\s*'([^']+)':\s*(['"` + "`" + `])(.*)['"` + "`" + `],?\s*$`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		en := map[string]string{}
		block := ""
		for line := range strings.SplitSeq(string(b), "\n") {
			switch strings.TrimSpace(line) {
			case "en: {":
				block = "en"
				continue
			case "zh: {":
				block = "zh"
				continue
			}
			m := entry.FindStringSubmatch(line)
			if m == nil || block == "" {
				continue
			}
			key, text := m[1], m[3]
			if block == "en" {
				en[key] = strings.ToLower(text)
				continue
			}
			for _, old := range []string{"限额", "配额"} {
				if strings.Contains(text, old) {
					t.Errorf("%s: %s: %q uses %s; the quota is 额度", f, key, text, old)
				}
			}
			e, ok := en[key]
			if !ok {
				continue
			}
			checked++
			credits := strings.Contains(e, "credit")
			quota := strings.Contains(e, "limit") || strings.Contains(e, "quota")
			switch {
			case credits && !strings.Contains(text, "积分"):
				t.Errorf("%s: %s: %q is about credits (%q) but lacks 积分", f, key, text, e)
			case !credits && strings.Contains(text, "积分"):
				t.Errorf("%s: %s: %q says 积分 but the English %q is not about credits", f, key, text, e)
			case strings.Contains(text, "额度") && !quota:
				t.Errorf("%s: %s: %q says 额度 but the English %q is not about the quota", f, key, text, e)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d Chinese strings read: the message files changed shape", checked)
	}
}

// An IP address is "IP 地址" in Chinese, one spelling everywhere a reader
// meets it: the pages, and the service's texts that the pages show (the
// root package's error texts, the client's and the server's messages). A
// Latin word is set apart from Chinese by a space on both sides, as in
// "IPv4 地址" and "CIDR 前缀".
func TestChineseIPAddressSpelling(t *testing.T) {
	wrong := regexp.MustCompile(`IP地址|\p{Han}IP ?地址`)
	var files []string
	for _, g := range []string{"web/src/*.js", "web/*.html", "*.go", "client/*.go", "internal/server/*.go"} {
		m, err := filepath.Glob(filepath.Join("..", "..", g))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts := strings.Split(string(b), "\n")
		if strings.HasSuffix(f, ".go") {
			texts = goStrings(t, f, b) // comments may quote the old spelling
		}
		for _, s := range texts {
			if strings.Contains(s, "地址") {
				checked++
			}
			if m := wrong.FindString(s); m != "" {
				t.Errorf("%s: %q writes %q; write \"IP 地址\", with a space on each side of IP", f, s, m)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d texts name an address: the test reads the wrong files", checked)
	}
}

// goStrings are the string literals of a Go source file, unquoted.
func goStrings(t *testing.T, name string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(name, fset.Base(), len(src)), src, nil, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.STRING {
			v, err := strconv.Unquote(lit)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, lit, err)
			}
			out = append(out, v)
		}
	}
}
