//go:build unix

package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/server"
)

// A server without internet, and without the dataset's scheduled updates,
// still tries the privacy lists on their own schedules, and says so
// quietly and truly: one warning per check (how many lists failed, the
// first reason, what answers meanwhile), no errors, no line that lists
// every list; one warning about the old dataset, claiming no other
// warning; a short "dataset loaded".
func TestServeOfflineLog(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "1.0.2026010100")...)
	dir := t.TempDir()
	if out, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL, "--privacy-lists=false"); err != nil {
		t.Fatalf("db fetch: %v\n%s", err, out)
	}
	dead := "http://127.0.0.1:1" // nothing listens on port 1
	s := startServe(t, map[string]string{"IPATLAS_X4BNET_URL": dead, "IPATLAS_IPRANGES_URL": dead, "IPATLAS_TOR_EXIT_URL": dead + "/tor"},
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", dir,
		"--store", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "--update-interval", "0",
		"--tor-interval", "1h", "--privacy-interval", "10s")
	others := len(privacy.Lists) - 1
	torWarning := "the privacy list " + privacy.TorList + " could not be fetched: no Tor exit list is in service, so the tor flag is unknown"
	othersWarning := fmt.Sprintf("%d of %d privacy lists could not be fetched: %d answer from the built-in snapshot", others, others, others)
	// The Tor list at once, the others within the first tenth of their
	// ten seconds.
	waitFor(t, "a warning for each check", func() bool {
		return strings.Contains(s.stderr.String(), torWarning) && strings.Contains(s.stderr.String(), othersWarning)
	})
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	logs := s.stderr.String()
	var old, loaded int
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		switch {
		case strings.Contains(line, "level=ERROR"):
			t.Errorf("an error: %s", line)
		case strings.Contains(line, "the copy in service stays") || strings.Contains(line, "copies in service stay"):
			t.Errorf("a claim of copies that may not be there: %s", line)
		case strings.Contains(line, "privacy list") && strings.Count(line, dead) > 1:
			t.Errorf("a line names more than one failure: %s", line)
		case strings.Contains(line, "the dataset in service is old"):
			old++
			if strings.Contains(line, "the warning says why") || !strings.Contains(line, "asn.mmdb") {
				t.Errorf("the old-data warning: %s", line)
			}
		case strings.Contains(line, `msg="dataset loaded"`):
			loaded++
			if strings.Contains(line, "builtin:") || !strings.Contains(line, fmt.Sprintf("privacy_lists=%d built_in=%d", others, others)) || len(line) > 300 {
				t.Errorf("dataset loaded: %d characters: %s", len(line), line)
			}
		}
	}
	if old != 1 || loaded != 1 {
		t.Errorf("%d warnings about the old dataset and %d 'dataset loaded', want 1 each:\n%s", old, loaded, logs)
	}
}

// The Tor exit list is fetched whatever the dataset's updates: --no-fetch
// and --update-interval 0 leave the dataset alone, not the tor flag.
func TestServeTorWithoutDatasetUpdates(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "1.0.2026010100")...)
	for _, off := range [][]string{{"--no-fetch"}, {"--update-interval", "0"}} {
		t.Run(off[0], func(t *testing.T) {
			dir := t.TempDir()
			if out, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL, "--privacy-lists=false"); err != nil {
				t.Fatalf("db fetch: %v\n%s", err, out)
			}
			const token = "offline-token-for-the-serve-tests"
			s := startServe(t, nil, append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", dir,
				"--store", "sqlite:" + filepath.Join(t.TempDir(), "s.db"), "--admin-token", token}, off...)...)
			waitFor(t, "the Tor exit list in service", func() bool {
				var ds server.Datasets
				if code := getJSON(t, http.DefaultClient, "http://"+s.admin+"/admin/datasets", token, &ds); code != http.StatusOK {
					t.Fatalf("GET /admin/datasets: %d", code)
				}
				for _, f := range ds.Files {
					if f.Kind == "privacy" && f.DatabaseType == privacy.TorList {
						return true
					}
				}
				return false
			})
			if err := s.stop(t); err != nil {
				t.Fatal(err)
			}
		})
	}
}
