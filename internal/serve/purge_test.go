package serve

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// TestServePurgesEndedSessions: serve's background purge deletes a
// session that ended beyond the retention, logs it, and stops with its
// context.
func TestServePurgesEndedSessions(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ipatlas.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	svc := &account.Service{Store: st, Now: func() time.Time { return now }}
	ns, err := svc.OperatorSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(account.EndedRetention + 24*time.Hour)

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil)) // read only after the loop has returned
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { purgeEnded(ctx, svc, log, time.Hour); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := st.SessionByHash(t.Context(), ns.Hash)
		if errors.Is(err, account.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended session is still there: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if out := logs.String(); !strings.Contains(out, "purged ended sessions and links") || !strings.Contains(out, "sessions=1") {
		t.Errorf("log: %s", out)
	}
}
