package geo

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ipatlas/ipatlas"
)

// appendPrivacy writes what encoding/json writes for the same object, with
// the Tor flag known or not, and for a service name that needs escapes.
func TestAppendPrivacyMatchesEncodingJSON(t *testing.T) {
	for _, service := range []string{"", "Amazon AWS", `a "quoted" \ name`, "名字", "tab\there", "<&>"} {
		for mask := range 32 {
			p := ipatlas.Privacy{Hosting: mask&1 != 0, VPN: mask&2 != 0, Relay: mask&4 != 0, Service: service}
			tor, known := mask&8 != 0, mask&16 != 0
			if known {
				p.Tor = &tor
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&p); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			if got := appendPrivacy(nil, p, tor, known); !bytes.Equal(got, want) {
				t.Errorf("got %s, want %s", got, want)
			}
		}
	}
}
