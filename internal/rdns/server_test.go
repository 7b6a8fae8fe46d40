package rdns

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// silentServer reads questions and never answers; it counts them.
func silentServer(t *testing.T) (addr string, questions *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	questions = new(atomic.Int64)
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			questions.Add(1)
		}
	}()
	return pc.LocalAddr().String(), questions
}

// rawServer answers every question with reply(question), bytes as they
// are: a server that sends what no well-behaved one would.
func rawServer(t *testing.T, reply func(q []byte) []byte) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(reply(buf[:n]), from)
		}
	}()
	return pc.LocalAddr().String()
}

// longPTRReply answers a question (a PTR one, in a query with only its
// question and an OPT record) with one PTR record whose name has five
// labels of 63 bytes: 321 octets, more than a name may have.
func longPTRReply(q []byte) []byte {
	// The header and the question: the question ends 4 bytes after the
	// first zero byte past the header.
	end := 12
	for q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5
	out := append([]byte(nil), q[:end]...)
	out[2] |= 0x80                              // QR
	out[3] = 0x80                               // RA, NOERROR
	binary.BigEndian.PutUint16(out[6:], 1)      // ANCOUNT
	binary.BigEndian.PutUint16(out[8:], 0)      // NSCOUNT
	binary.BigEndian.PutUint16(out[10:], 0)     // ARCOUNT
	out = append(out, 0xc0, 12)                 // the question's name
	out = append(out, 0, 12, 0, 1, 0, 0, 1, 44) // PTR IN, TTL 300
	var name []byte
	for range 5 {
		name = append(name, 63)
		name = append(name, strings.Repeat("a", 63)...)
	}
	name = append(name, 0)
	out = binary.BigEndian.AppendUint16(out, uint16(len(name)))
	return append(out, name...)
}

// clock is a settable time for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
