//go:build unix && !linux

package sqlite

// lockFileOf takes the lock on a file named by the database's device and
// inode: the BSDs and macOS keep flock and POSIX record locks in one
// table, so a flock on the database file would block SQLite's own locks
// in other processes.
var lockFileOf = lockInodeName
