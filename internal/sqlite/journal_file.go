//go:build unix

package sqlite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ipatlas/ipatlas/internal/failpoint"
)

// The charge journal is a file beside the database, NAME-charges.journal:
// a sequence of records, each one batch's grants, framed as
//
//	length uint32 (of the payload, little-endian) | CRC-32C uint32 (of the payload) | payload
//
// and the payload as varints: sequence number, period (length, bytes), time (Unix ns), number of
// grants, then per grant the key ID (length, bytes), account ID, queries
// granted and cost per query. A record is appended with one write and
// made durable with one fdatasync before any of its charges is answered.
//
// The file is written in place over space allocated ahead with zeros
// (journalChunk at a time), as SQLite reuses its WAL: an fdatasync that
// must also commit a new file length costs the file system a journal
// commit of its own, twice the wall time of one that does not. Once every
// record is applied the next one is written at the start again. Reading
// stops at the first frame that is zero, torn, fails its checksum or does
// not carry a higher sequence number than the one before: what lies
// beyond it is an earlier round's records (all applied) or zeros.
// A record that is cut short or fails its checksum was never fully
// synced, so never answered: it and anything after it are dropped.
type journalFile struct {
	path  string
	f     *os.File
	size  int64 // of the valid records: where the next one is written
	alloc int64 // the file's length, zeros or old records beyond size
	buf   []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// jGrant is the charge of one key in a journal record.
type jGrant struct {
	keyID     string
	accountID int64
	n, cost   int64
}

// jRecord is one batch's grants.
type jRecord struct {
	seq    uint64
	period string // of the monthly counter charged
	at     time.Time
	grants []jGrant
}

const journalChunk = 4 << 20

// journalPath names the journal of the database at dbPath from the
// file's real path (symlinks resolved, as SQLite names its -wal file), so
// that a server started under another name of the file replays the same
// journal.
func journalPath(dbPath string) string {
	if real, err := filepath.EvalSymlinks(dbPath); err == nil {
		dbPath = real
	}
	return dbPath + "-charges.journal"
}

// openJournalFile reads the journal's valid records and cuts off a torn
// tail. The caller holds the store's writer lock. A journal left beside a
// symlink's name, which the journal was named by before, is moved to the
// real path's name when none is there, so that its records are replayed.
func openJournalFile(dbPath string) (*journalFile, []jRecord, error) {
	j := &journalFile{path: journalPath(dbPath)}
	if byLink := dbPath + "-charges.journal"; byLink != j.path {
		if _, err := os.Lstat(j.path); errors.Is(err, fs.ErrNotExist) {
			if st, err := os.Lstat(byLink); err == nil && st.Mode().IsRegular() {
				if err := os.Rename(byLink, j.path); err != nil {
					return nil, nil, fmt.Errorf("sqlite: journal: moving %s beside the database's real path: %w", byLink, err)
				}
			}
		}
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: journal: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("sqlite: journal: %w", err)
	}
	recs, good := decodeJournal(data)
	j.f, j.size, j.alloc = f, good, int64(len(data))
	return j, recs, nil
}

// decodeJournal parses the valid records of data and the length they take.
func decodeJournal(data []byte) ([]jRecord, int64) {
	var recs []jRecord
	var off int64
	for {
		rest := data[off:]
		if len(rest) < 8 {
			return recs, off
		}
		n := int64(binary.LittleEndian.Uint32(rest))
		sum := binary.LittleEndian.Uint32(rest[4:])
		if n == 0 || n > int64(len(rest))-8 {
			return recs, off
		}
		payload := rest[8 : 8+n]
		if crc32.Checksum(payload, castagnoli) != sum {
			return recs, off
		}
		r, ok := decodeRecord(payload)
		if !ok || (len(recs) > 0 && r.seq <= recs[len(recs)-1].seq) {
			return recs, off
		}
		recs = append(recs, r)
		off += 8 + n
	}
}

func appendRecord(buf []byte, r jRecord) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0)
	buf = binary.AppendUvarint(buf, r.seq)
	buf = binary.AppendUvarint(buf, uint64(len(r.period)))
	buf = append(buf, r.period...)
	buf = binary.AppendVarint(buf, r.at.UnixNano())
	buf = binary.AppendUvarint(buf, uint64(len(r.grants)))
	for _, g := range r.grants {
		buf = binary.AppendUvarint(buf, uint64(len(g.keyID)))
		buf = append(buf, g.keyID...)
		buf = binary.AppendVarint(buf, g.accountID)
		buf = binary.AppendVarint(buf, g.n)
		buf = binary.AppendVarint(buf, g.cost)
	}
	payload := buf[start+8:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, castagnoli))
	return buf
}

func decodeRecord(p []byte) (jRecord, bool) {
	var r jRecord
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	sv := func() (int64, bool) {
		v, n := binary.Varint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	var ok bool
	var at int64
	var count uint64
	if r.seq, ok = uv(); !ok {
		return r, false
	}
	l, ok := uv()
	if !ok || l > uint64(len(p)) {
		return r, false
	}
	r.period, p = string(p[:l]), p[l:]
	if at, ok = sv(); !ok {
		return r, false
	}
	r.at = time.Unix(0, at).UTC()
	if count, ok = uv(); !ok || count > uint64(len(p)) {
		return r, false
	}
	r.grants = make([]jGrant, 0, count)
	for range count {
		var g jGrant
		l, ok := uv()
		if !ok || l > uint64(len(p)) {
			return r, false
		}
		g.keyID, p = string(p[:l]), p[l:]
		if g.accountID, ok = sv(); !ok {
			return r, false
		}
		if g.n, ok = sv(); !ok {
			return r, false
		}
		if g.cost, ok = sv(); !ok {
			return r, false
		}
		r.grants = append(r.grants, g)
	}
	return r, len(p) == 0
}

// append writes r and makes it durable. A failed write leaves at most a
// torn frame where the next record goes, which that record overwrites.
func (j *journalFile) append(r jRecord) error {
	j.buf = appendRecord(j.buf[:0], r)
	if end := j.size + int64(len(j.buf)); end > j.alloc {
		if err := j.grow(end); err != nil {
			return fmt.Errorf("sqlite: journal: %w", err)
		}
	}
	if _, err := j.f.WriteAt(j.buf, j.size); err != nil {
		return fmt.Errorf("sqlite: journal: %w", err)
	}
	failpoint.Hit("journal-before-sync")
	if err := datasync(j.f); err != nil {
		return fmt.Errorf("sqlite: journal: %w", err)
	}
	j.size += int64(len(j.buf))
	return nil
}

// checkRoom is the room check wants ahead of the next record: more than
// a batch of charges takes.
const checkRoom = 64 << 10

// check makes sure the next record can be written, by the writes append
// makes: room allocated ahead of it (a chunk allocated now when less than
// checkRoom is left, as append would allocate it a few records later),
// and the first bytes of its frame written as zeros and synced. Zeros
// there end the journal where it ends already, and the next record
// overwrites them.
func (j *journalFile) check() error {
	if end := j.size + checkRoom; end > j.alloc {
		if err := j.grow(end); err != nil {
			return fmt.Errorf("sqlite: journal: %w", err)
		}
	}
	if _, err := j.f.WriteAt(make([]byte, 8), j.size); err != nil {
		return fmt.Errorf("sqlite: journal: %w", err)
	}
	if err := datasync(j.f); err != nil {
		return fmt.Errorf("sqlite: journal: %w", err)
	}
	return nil
}

// grow allocates zeros up to at least end, a whole chunk at a time.
func (j *journalFile) grow(end int64) error {
	alloc := (end + journalChunk - 1) / journalChunk * journalChunk
	zeros := make([]byte, alloc-j.alloc)
	if _, err := j.f.WriteAt(zeros, j.alloc); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	j.alloc = alloc
	return nil
}

// restart writes the next record at the start: every record in the file
// is applied. Zeroing the first frame's length and syncing it keeps a
// reader from taking the old records for new ones' successors.
func (j *journalFile) restart() error {
	if j.size == 0 {
		return nil
	}
	if _, err := j.f.WriteAt(make([]byte, 8), 0); err != nil {
		return err
	}
	if err := datasync(j.f); err != nil {
		return err
	}
	j.size = 0
	return nil
}

// rewrite replaces the journal with recs (the records not yet applied):
// written to a new file, synced, renamed over the old one.
func (j *journalFile) rewrite(recs []jRecord) error {
	if len(recs) == 0 {
		return j.restart()
	}
	tmp := j.path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	var buf []byte
	for _, r := range recs {
		buf = appendRecord(buf, r)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := os.Rename(tmp, j.path); err != nil {
		f.Close()
		return err
	}
	if d, err := os.Open(filepath.Dir(j.path)); err == nil {
		d.Sync()
		d.Close()
	}
	j.f.Close()
	j.f, j.size, j.alloc = f, int64(len(buf)), int64(len(buf))
	return nil
}

func (j *journalFile) close() error { return j.f.Close() }
