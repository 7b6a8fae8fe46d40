package main

import (
	"os"
	"path/filepath"
)

// defaultDataDir is where datasets live unless --data-dir or
// IPATLAS_DATA_DIR says otherwise: $XDG_DATA_HOME/ipatlas, else
// ~/.local/share/ipatlas, else ./ipatlas-data.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("IPATLAS_DATA_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ipatlas")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "ipatlas")
	}
	return "ipatlas-data"
}

// defaultStore is the store DSN unless --store or IPATLAS_STORE says
// otherwise: an SQLite file in the data dir.
func defaultStore(getenv func(string) string) string {
	if s := getenv("IPATLAS_STORE"); s != "" {
		return s
	}
	return "sqlite:" + filepath.Join(defaultDataDir(getenv), "ipatlas.db")
}
