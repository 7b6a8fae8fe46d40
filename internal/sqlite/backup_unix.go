//go:build unix

package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// journalTail is what a backup's snapshot lacks of the charge journal:
// the records after its applied sequence number.
type journalTail struct {
	n           int
	first, last uint64 // sequence numbers, when n > 0
	applied     uint64 // the snapshot's applied_seq
	recs        []jRecord
}

// readJournalTail reads the charge journal beside the database at dbPath
// without taking its lock (a server may be appending to it) and returns
// its valid records after sequence number after. A record being written
// is cut short or fails its checksum and ends the reading, as it does a
// replay.
func readJournalTail(dbPath string, after uint64) (journalTail, error) {
	data, err := os.ReadFile(journalPath(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return journalTail{}, nil
	}
	if err != nil {
		return journalTail{}, err
	}
	recs, _ := decodeJournal(data)
	var t journalTail
	for _, r := range recs {
		if r.seq > after {
			t.recs = append(t.recs, r)
		}
	}
	if t.n = len(t.recs); t.n > 0 {
		t.first, t.last = t.recs[0].seq, t.recs[t.n-1].seq
	}
	return t, nil
}

// apply applies the records to the store s (a backup's copy), as the
// serving process applies them to its tables.
func (t journalTail) apply(ctx context.Context, s *Store) error {
	return s.applyRecords(ctx, t.recs, "backup-before-commit")
}
