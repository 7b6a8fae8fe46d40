package sqlite

// lockOnFile: Linux keeps flock and POSIX record locks apart, so the
// writer lock can be a flock on the database file itself. (Not on NFS,
// where flock is a record lock; SQLite's WAL mode does not work there.)
const lockOnFile = true
