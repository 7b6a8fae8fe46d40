package server

import (
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
)

// The body limits the documents state are the server's: README's table of
// codes and SECURITY.md say 8 KiB for a body, 16 KiB for a batch of 100
// and 96 KiB for ipinfo's batch of 1,000, in that order, and the OpenAPI
// document says ipinfo's batch limit where it describes the batch.
func TestBodyLimitsAsDocumented(t *testing.T) {
	want := []int{maxBodyBytes >> 10, maxBatchBodyBytes >> 10, maxIPInfoBatchBytes >> 10}
	kib := regexp.MustCompile(`(\d+) KiB`)
	stated := func(text string) []int {
		var n []int
		for _, m := range kib.FindAllStringSubmatch(text, -1) {
			v, _ := strconv.Atoi(m[1])
			n = append(n, v)
		}
		return n
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readme := read("../../README.md")
	i := strings.Index(readme, "| `PayloadTooLarge` |")
	if i < 0 {
		t.Fatal("README has no PayloadTooLarge row")
	}
	row := readme[i : i+strings.IndexByte(readme[i:], '\n')]
	if got := stated(row); !slices.Equal(got, want) {
		t.Errorf("README's PayloadTooLarge row states %v KiB, the server refuses past %v KiB: %s", got, want, row)
	}
	security := read("../../SECURITY.md")
	i = strings.Index(security, "- **Garbage.**")
	j := strings.Index(security[max(i, 0):], "without reading further")
	if i < 0 || j < 0 {
		t.Fatal("SECURITY.md has no Garbage paragraph stating the body limits")
	}
	if got := stated(security[i : i+j]); !slices.Equal(got, want) {
		t.Errorf("SECURITY.md states %v KiB, the server refuses past %v KiB", got, want)
	}
	op := publicSpec(t).doc.Paths.Find("/ipinfo/batch").Post
	if !strings.Contains(op.Description, fmt.Sprintf("%d KiB", maxIPInfoBatchBytes>>10)) {
		t.Errorf("the OpenAPI document's ipinfo batch does not state its %d KiB limit", maxIPInfoBatchBytes>>10)
	}
}

// ipinfo's batch takes its 1,000 items at their longest, and refuses a
// body one byte over its limit with 413, naming the limit.
func TestIPInfoBatchBodyLimit(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 10)
	item := `"0000:0000:0000:0000:0000:ffff:255.255.255.255/timezone"`
	body := "[" + strings.Repeat(item+",", 999) + item + "]"
	if len(body) > maxIPInfoBatchBytes {
		t.Fatalf("1,000 long items take %d bytes, over the limit %d", len(body), maxIPInfoBatchBytes)
	}
	// Not e.do: checking a body this size against the OpenAPI document
	// takes seconds under the race detector.
	post := func(body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, newRequest(req{method: "POST", path: "/ipinfo/batch", key: k.Secret, body: body}))
		return w
	}
	if r := post(body); r.Code != 200 {
		t.Errorf("1,000 long items (%d bytes): %d %s", len(body), r.Code, r.Body)
	}
	over := `["8.8.8.8"` + strings.Repeat(" ", maxIPInfoBatchBytes-len(`["8.8.8.8"]`)+1) + "]"
	if r := post(over); r.Code != 413 || !strings.Contains(r.Body.String(), strconv.Itoa(maxIPInfoBatchBytes)) {
		t.Errorf("a body of %d bytes: %d %s, want 413 naming the limit", len(over), r.Code, r.Body)
	}
}
