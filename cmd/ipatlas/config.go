package main

import (
	"os"
	"path/filepath"
)

// defaultDataDir is where datasets live unless --data-dir, IPATLAS_DATA_DIR
// or the config file says otherwise: $XDG_DATA_HOME/ipatlas, else
// ~/.local/share/ipatlas, else ./ipatlas-data.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ipatlas")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "ipatlas")
	}
	return "ipatlas-data"
}

// localSettings are the config file, data dir and store of the commands
// that use them directly (db, lookup --local, accounts, keys, credits).
type localSettings struct {
	file    configFile
	dataDir string
	store   string // default: sqlite:DATA-DIR/ipatlas.db
}

// resolveLocal applies the one precedence rule to --data-dir and --store
// as given ("" when absent).
func resolveLocal(e env, configFlag, dataDirFlag, storeFlag string) (localSettings, error) {
	file, err := loadConfig(configFlag, e.getenv, e.stderr)
	if err != nil {
		return localSettings{}, err
	}
	dir := file.value(e.getenv, dataDirFlag, "data-dir", defaultDataDir(e.getenv))
	store := file.value(e.getenv, storeFlag, "store", "sqlite:"+filepath.Join(dir, "ipatlas.db"))
	return localSettings{file: file, dataDir: dir, store: store}, nil
}
