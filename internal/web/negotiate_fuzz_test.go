package web

import "testing"

// FuzzNegotiate checks the invariants of content negotiation on any
// Accept and User-Agent: the chosen Format is one the client accepts
// (weight above 0) unless it accepts none, it is never outweighed by
// another, and a command-line client gets plain text whenever it accepts it.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []struct{ accept, ua string }{
		{"*/*", uaCurl}, {acceptHTTPie, uaHTTPie}, {acceptChrome, uaChrome}, {"application/json", ""},
		{"text/plain;q=0, */*", ""}, {"text/*;q=0.5, application/json;q=0.5", ""}, {"", ""},
		{"text/html;q=abc", ""}, {`text/html;level="1,2"`, ""}, {"*/*;q=0", uaWget},
	} {
		f.Add(s.accept, s.ua)
	}
	f.Fuzz(func(t *testing.T, accept, ua string) {
		got := negotiate(accept, ua)
		if got > FormatHTML {
			t.Fatalf("Format %d", got)
		}
		q := weights(accept)
		best := max(q[FormatText], q[FormatJSON], q[FormatHTML])
		if best == 0 {
			if got != FormatText {
				t.Errorf("nothing acceptable, got %v instead of the plain-text fallback", got)
			}
			return
		}
		if isCLI(ua) && q[FormatText] > 0 {
			if got != FormatText {
				t.Errorf("a command-line client accepting text got %v", got)
			}
			return
		}
		if q[got] != best {
			t.Errorf("got %v (q=%v) although another Format weighs %v", got, q[got], best)
		}
	})
}
