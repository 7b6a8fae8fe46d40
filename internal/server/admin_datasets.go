package server

import (
	"net/http"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// Datasets is the body of GET /admin/datasets: the files in service, what
// was fetched into the data dir, and the scheduled updates.
type Datasets struct {
	Files    []DatasetFile         `json:"files"`
	Packages []dataset.Package     `json:"packages"`
	Update   *dataset.UpdateStatus `json:"update"` // null when scheduled updates are off
	// RefusedLists are the privacy lists' downloads refused whole by
	// their checks: each list answers from the copy before (the
	// snapshot's, or none for the Tor exits) until a good one comes.
	RefusedLists []privacy.Refusal `json:"refused_lists"`
	// Corrections are the locations above the dataset: the overrides
	// file, then the published feeds, each with its skipped lines and
	// refused entries.
	Corrections []geo.CorrectionInfo `json:"corrections"`
}

// DatasetFile is one file in service, in precedence order: an MMDB file,
// or a privacy list.
type DatasetFile struct {
	File         string    `json:"file"`
	Kind         string    `json:"kind"`
	DatabaseType string    `json:"database_type"`
	IPVersion    int       `json:"ip_version"`
	BuildTime    time.Time `json:"build_time"`
	AgeSeconds   int64     `json:"age_seconds"` // since BuildTime
	// A privacy list (Kind "privacy") also says where its copy came from,
	// its size in bytes and its number of entries; its BuildTime is the
	// list's date.
	URL      string `json:"url,omitempty"`
	Bytes    int64  `json:"bytes,omitempty"`
	Networks int    `json:"networks,omitempty"`
	// RefusedEntries are the list's entries its bounds refused.
	RefusedEntries *privacy.Refusals `json:"refused_entries,omitempty"`
}

// DatasetSources is what the server cannot see for itself: the manifest of
// the data dir and the state of scheduled updates (nil when off).
type DatasetSources func() ([]dataset.Package, *dataset.UpdateStatus)

// datasetLister is the part of the engine that lists the files in service.
type datasetLister interface{ Datasets() []geo.SourceInfo }

// privacyRefusals is the part of the engine that lists the privacy lists'
// refused downloads.
type privacyRefusals interface{ PrivacyRefused() []privacy.Refusal }

// correctionLister is the part of the engine that lists its corrections.
type correctionLister interface{ Corrections() []geo.CorrectionInfo }

func (s *admin) datasets(w *exchange, r *http.Request) error {
	body := Datasets{Files: []DatasetFile{}, Packages: []dataset.Package{}, RefusedLists: []privacy.Refusal{}, Corrections: []geo.CorrectionInfo{}}
	if l, ok := s.deps.Geo.(correctionLister); ok {
		body.Corrections = append(body.Corrections, l.Corrections()...)
	}
	if l, ok := s.deps.Geo.(datasetLister); ok {
		now := s.now()
		for _, d := range l.Datasets() {
			built, _ := time.Parse(time.RFC3339, d.BuildTime)
			body.Files = append(body.Files, DatasetFile{File: d.File, Kind: d.Kind, DatabaseType: d.DatabaseType,
				IPVersion: d.IPVersion, BuildTime: built, AgeSeconds: int64(now.Sub(built) / time.Second),
				URL: d.URL, Bytes: d.Bytes, Networks: d.Networks, RefusedEntries: d.RefusedEntries})
		}
	}
	if l, ok := s.deps.Geo.(privacyRefusals); ok {
		body.RefusedLists = append(body.RefusedLists, l.PrivacyRefused()...)
	}
	if s.deps.DatasetSources != nil {
		pkgs, upd := s.deps.DatasetSources()
		if pkgs != nil {
			body.Packages = pkgs
		}
		body.Update = upd
	}
	return reply(w, http.StatusOK, &body)
}
