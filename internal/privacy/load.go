package privacy

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ManifestFile describes the lists fetched into a data directory. The
// dataset package writes it last, after the files it lists are in place.
const ManifestFile = "privacy.json"

// Manifest is the content of ManifestFile.
type Manifest struct {
	Lists []ListState `json:"lists"`
	// Refused are the last downloads refused whole, one per list, until a
	// good copy of the list is fetched.
	Refused []Refusal `json:"refused,omitempty"`
}

// ListState is one fetched list in a data directory.
type ListState struct {
	Name string `json:"name"`
	URL  string `json:"url"` // where this copy came from
	// Modified is the upstream's Last-Modified for this copy, when it
	// sent one.
	Modified  time.Time `json:"modified,omitzero"`
	FetchedAt time.Time `json:"fetched_at"`
	Size      int64     `json:"size"`
	SHA256    string    `json:"sha256"`
	Entries   int       `json:"entries"`
}

// Date is the date of the list's data: the upstream's, else the fetch's.
func (s ListState) Date() time.Time {
	if !s.Modified.IsZero() {
		return s.Modified
	}
	return s.FetchedAt
}

// State returns the state of the named list.
func (m Manifest) State(name string) (ListState, bool) {
	for _, s := range m.Lists {
		if s.Name == name {
			return s, true
		}
	}
	return ListState{}, false
}

// ReadManifest reads the manifest of a data directory; a directory without
// one yields an empty manifest and no error.
func ReadManifest(dir string) (Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, nil
	}
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("reading %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return m, nil
}

//go:embed snapshot/*.txt.gz
var snapshot embed.FS

// SnapshotDate is the date of the upstream commits the snapshot was taken
// from (see snapshot/NOTICE).
var SnapshotDate = time.Date(2026, 8, 22, 0, 0, 0, 0, time.UTC)

// Snapshot returns the snapshot's copy of a list, uncompressed; ok is false
// for a list it lacks (the Tor exits).
func Snapshot(name string) (b []byte, ok bool, err error) {
	z, err := snapshot.ReadFile("snapshot/privacy-" + name + ".txt.gz")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, false, err
	}
	b, err = io.ReadAll(r)
	return b, true, err
}

// Load compiles the lists of a data directory: each list its manifest
// names, from its file; each other list, when builtin is set, from the
// snapshot. It returns nil and no error when no list is available at all
// (the privacy flags are then unknown). A listed file that is missing or
// does not parse is an error naming it: the caller keeps the table it has.
func Load(dir string, builtin bool) (*Table, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	var loaded []Loaded
	refused := m.Refused
	for _, l := range Lists {
		if st, ok := m.State(l.Name); ok {
			path := filepath.Join(dir, l.File())
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("privacy: %w", err)
			}
			e, err := l.Parse(b)
			if err != nil {
				return nil, fmt.Errorf("privacy: %s: %w", path, err)
			}
			// A copy that fails the bounds (fetched by a build with
			// looser ones) gives way to the snapshot's, as if never
			// fetched.
			kept, r, err := l.Check(e)
			if err == nil {
				loaded = append(loaded, Loaded{List: l, Entries: kept, Info: ListInfo{Name: l.Name, File: l.File(), URL: st.URL,
					Source: l.Source, License: l.License, Date: st.Date(), Size: int64(len(b)), Entries: kept.Len(), Refused: r}})
				continue
			}
			refused = append(refused, Refusal{Name: l.Name, URL: st.URL, At: st.FetchedAt, Reason: err.Error()})
		}
		if !builtin {
			continue
		}
		b, ok, err := Snapshot(l.Name)
		if err != nil {
			return nil, fmt.Errorf("privacy: the built-in snapshot of %s: %w", l.Name, err)
		}
		if !ok {
			continue
		}
		e, err := l.Parse(b)
		var r Refusals
		if err == nil {
			e, r, err = l.Check(e)
		}
		if err != nil {
			return nil, fmt.Errorf("privacy: the built-in snapshot of %s: %w", l.Name, err)
		}
		loaded = append(loaded, Loaded{List: l, Entries: e, Info: ListInfo{Name: l.Name, URL: l.URL, Source: l.Source,
			License: l.License, Date: SnapshotDate, Size: int64(len(b)), Entries: e.Len(), Builtin: true, Refused: r}})
	}
	if len(loaded) == 0 {
		return nil, nil
	}
	t := Compile(loaded)
	t.refused = refused
	return t, nil
}
