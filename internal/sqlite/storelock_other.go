//go:build unix && !linux

package sqlite

// lockOnFile: the BSDs and macOS keep flock and POSIX record locks in one
// table, so a flock on the database file would block SQLite's own locks
// in other processes.
const lockOnFile = false
