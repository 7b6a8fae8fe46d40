package geo

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// Watch reloads the dataset whenever an MMDB file, a zone index or the
// privacy lists' manifest (written last by a fetch of the lists) in the
// data directory is created, written, renamed or removed, once the
// directory has been quiet for Options.Debounce: `db fetch` renames its
// new files into place one by one, and one reload after the last is
// enough. When only the manifest of the lists changed (the Tor exit list
// is fetched hourly), only the lists are read again (ReloadPrivacy), not
// the MMDB files. A reload that fails is logged and the previous dataset
// stays in service. Watch returns when ctx is done (nil), or at once if the
// directory cannot be watched.
//
// Long-running servers are what call Watch, so it also builds the
// time-zone finders in the background (about a second of CPU) when the
// data lacks time zones and a city file has no zone index to answer them,
// rather than stall the first lookups, which all need them; one-shot
// commands never pay for what they do not use. The AS index is left to the
// first AS query (asIndex says why).
func (e *Engine) Watch(ctx context.Context) error {
	if e.needsTimeZones() {
		go warmTimeZones()
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("geo: watching %s: %w", e.dir, err)
	}
	defer w.Close()
	if err := w.Add(e.dir); err != nil {
		return fmt.Errorf("geo: watching %s: %w", e.dir, err)
	}
	debounce := e.opts.Debounce
	if debounce <= 0 {
		debounce = time.Second
	}
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	mmdb := false // an MMDB file or a zone index changed since the last reload
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if name := filepath.Base(ev.Name); !(isDataFile(name) || isZoneIndexFile(name) || isPostalIndexFile(name) || name == privacy.ManifestFile) || !ev.Has(fsnotify.Create|fsnotify.Write|fsnotify.Rename|fsnotify.Remove) {
				continue
			}
			e.log.Debug("data dir changed", "file", ev.Name, "op", ev.Op.String())
			mmdb = mmdb || filepath.Base(ev.Name) != privacy.ManifestFile
			timer.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// An overflow loses events, not the watch: reload to be sure.
			e.log.Warn("watching the data dir", "dir", e.dir, "err", err)
			mmdb = true
			timer.Reset(debounce)
		case <-timer.C:
			reload := e.Reload
			if !mmdb {
				reload = e.ReloadPrivacy
			}
			err := reload()
			switch {
			case err == ErrClosed:
				return nil
			case err != nil:
				e.log.Error("reloading the dataset after a change in the data dir; still serving the previous one", "dir", e.dir, "err", err)
			case !mmdb:
				e.log.Debug("privacy lists reloaded", "dir", e.dir)
			default:
				mmdb = false
			}
		}
	}
}
