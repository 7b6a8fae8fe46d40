//go:build unix

package sqlite

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"
)

// A process without the journal (the CLI beside `ipatlas serve`) reads
// and changes the tables, which trail the charges the server answered by
// the records its applier has not written yet (Options.ApplyEvery, 1 s).
// Its reads and changes start by catching up with the journal, so that a
// balance it reports or checks includes every charge answered before the
// call, and the ledger entries of those charges come before the entry a
// change writes:
//
//   - while a server holds the journal, by waiting for its applier to
//     write the records the journal held at the call (it never waits for
//     records written after), at most Options.BusyTimeout;
//   - when none does (a server killed and not started again), by applying
//     those records to the tables itself, as the next server's start would
//     (applying is idempotent: a record at or below the applied sequence
//     number is skipped).
//
// The journal file is only read here, never written.

// awaitPollEvery is how often the applied sequence number is read while
// waiting for the server's applier.
const awaitPollEvery = 10 * time.Millisecond

// awaitHook, when set (by tests), is called when a wait for the server's
// applier begins.
var awaitHook func()

// ErrJournalBehind is the error of a change made beside a server whose
// applier did not write the charges it answered before the change within
// Options.BusyTimeout: the change is not made.
var ErrJournalBehind = errors.New("the running server has not applied the charges it answered to the tables")

// catchUpOutside brings the tables up to the charge journal as it is at
// the call. change says the caller is about to change the tables: a wait
// for the server that runs out is then ErrJournalBehind; a read goes on
// with the tables as they are.
func (s *Store) catchUpOutside(ctx context.Context, change bool) error {
	recs, err := readJournal(journalPath(s.path))
	if err != nil || len(recs) == 0 {
		return err
	}
	last := recs[len(recs)-1].seq
	applied, err := s.appliedSeq(ctx)
	if err != nil || applied >= last {
		return err
	}
	running, err := serverRunning(s.path)
	if err != nil {
		return err
	}
	if !running {
		for chunk := range slices.Chunk(recs, replayChunk) {
			if err := s.applyRecords(ctx, chunk, ""); err != nil {
				return fmt.Errorf("sqlite: applying the charge journal a stopped server left: %w", err)
			}
		}
		return nil
	}
	if awaitHook != nil {
		awaitHook()
	}
	deadline := time.Now().Add(s.busy)
	t := time.NewTicker(awaitPollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if applied, err = s.appliedSeq(ctx); err != nil || applied >= last {
			return err
		}
		if time.Now().After(deadline) {
			if !change {
				return nil
			}
			return fmt.Errorf("sqlite: %s: %w within %s (%d journal records wait; is its disk full?); nothing was changed",
				s.path, ErrJournalBehind, s.busy, countAbove(recs, applied))
		}
	}
}

func (s *Store) appliedSeq(ctx context.Context) (uint64, error) {
	var applied uint64
	if err := s.r.QueryRowContext(ctx, "SELECT applied_seq FROM charge_journal WHERE id = 1").Scan(&applied); err != nil {
		return 0, fmt.Errorf("sqlite: journal: %w", err)
	}
	return applied, nil
}

func countAbove(recs []jRecord, seq uint64) int {
	n := 0
	for _, r := range recs {
		if r.seq > seq {
			n++
		}
	}
	return n
}

// serverRunning reports whether a server holds the store's lock by the
// name dbPath, by asking for a shared lock on NAME.lock without waiting.
// The lock taken is dropped at once; a server starting in that instant
// would be refused as if another one ran, which is why this is asked only
// when the journal holds records the tables lack.
func serverRunning(dbPath string) (bool, error) {
	f, err := os.Open(lockPath(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // no server ever ran by this name
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: lock: %w", err)
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("sqlite: lock %s: %w", lockPath(dbPath), err)
	}
	return false, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// readJournal reads the valid records of the journal at path, as
// decodeJournal does, frame by frame: it stops at the first zero frame,
// without reading the zeros allocated beyond it. A missing journal has no
// records.
func readJournal(path string) ([]jRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: journal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("sqlite: journal: %w", err)
	}
	left := st.Size()
	r := bufio.NewReader(f)
	var recs []jRecord
	var head [8]byte
	var payload []byte
	for left >= 8 {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			break // shorter than it was: a rewrite replaced it meanwhile
		}
		n := int64(binary.LittleEndian.Uint32(head[:]))
		sum := binary.LittleEndian.Uint32(head[4:])
		if n == 0 || n > left-8 {
			break
		}
		payload = slices.Grow(payload[:0], int(n))[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			break
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			break
		}
		rec, ok := decodeRecord(payload)
		if !ok || (len(recs) > 0 && rec.seq <= recs[len(recs)-1].seq) {
			break
		}
		recs = append(recs, rec)
		left -= 8 + n
	}
	return recs, nil
}
