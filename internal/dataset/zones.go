package dataset

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo"
)

// Every city file is installed with its zone index (geo.ZoneIndexFile),
// which holds the time zones that the records without one take from their
// coordinates, so that the serving process never builds the time-zone
// finders. The index is derived data: it is not in the manifest, a file
// whose index cannot be built is still installed (the server then derives
// the zones itself), and a fetch that finds a file up to date writes its
// index if it lacks one.

// install stages the zone index of each staged city file and renames the
// indexes into place before the files: an engine that reloads on a new
// file finds its index already there.
func (f *fetcher) install(ctx context.Context, staged []stagedFile) error {
	idx, err := f.stageZoneIndexes(ctx, staged)
	if err != nil {
		removeStaged(staged)
		return err
	}
	return install(f.dir, append(idx, staged...))
}

// stageZoneIndexes stages the zone index and the postal index of every
// staged file that takes them. A failure is a warning, except a cancelled
// fetch.
func (f *fetcher) stageZoneIndexes(ctx context.Context, staged []stagedFile) ([]stagedFile, error) {
	var out []stagedFile
	for _, s := range staged {
		if !strings.HasSuffix(s.name, ".mmdb") {
			continue
		}
		for _, stage := range []func(context.Context, string, string) (stagedFile, bool, error){f.stageZoneIndex, f.stagePostalIndex} {
			idx, ok, err := stage(ctx, s.tmp, s.name)
			if err != nil {
				removeStaged(out)
				return nil, err
			}
			if ok {
				out = append(out, idx)
			}
		}
	}
	return out, nil
}

// stageZoneIndex builds the zone index of the MMDB file at path, to be
// installed beside name; ok is false when it takes none or the index
// could not be built (a warning). The error is a cancelled fetch's.
func (f *fetcher) stageZoneIndex(ctx context.Context, path, name string) (idx stagedFile, ok bool, err error) {
	start := f.now()
	b, st, err := geo.BuildZoneIndex(ctx, path)
	if cerr := ctx.Err(); cerr != nil {
		return stagedFile{}, false, cerr
	}
	if err == nil && b != nil {
		var t *tempFile
		if t, err = createTemp(f.dir, geo.ZoneIndexFile(name)); err == nil {
			if _, err = t.Write(b); err != nil {
				t.abort()
			} else {
				idx, err = t.finish()
			}
		}
	}
	if err != nil {
		f.rep.warn(name, fmt.Sprintf("installing %s without a time-zone index, whose zones the server then derives itself: %v", name, err), "file", name)
		return stagedFile{}, false, nil
	}
	if b == nil {
		return stagedFile{}, false, nil
	}
	took := f.now().Sub(start)
	f.rep.info(name, fmt.Sprintf("indexed the time zones of %d of its %d records in %s (%s)", st.Indexed, st.Records,
		took.Round(time.Millisecond), mib(int64(st.Bytes))), "file", name, "indexed", st.Indexed, "duration", took)
	return idx, true, nil
}

// ensureZoneIndexes writes the missing (or stale) zone index of each file
// of an installed package.
func (f *fetcher) ensureZoneIndexes(ctx context.Context, p Package) {
	for _, file := range p.Files {
		path := filepath.Join(f.dir, file.Name)
		if need, err := geo.NeedsZoneIndex(path); err != nil || !need {
			continue
		}
		idx, ok, err := f.stageZoneIndex(ctx, path, file.Name)
		if err != nil || !ok {
			continue
		}
		if err := install(f.dir, []stagedFile{idx}); err != nil {
			f.rep.warn(file.Name, fmt.Sprintf("installing the time-zone index of %s: %v", file.Name, err), "file", file.Name)
		}
	}
}
