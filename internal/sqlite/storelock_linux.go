package sqlite

// lockFileOf takes the lock on the database file itself: Linux keeps
// flock and POSIX record locks apart. (Not on NFS, where flock is a
// record lock; SQLite's WAL mode does not work there.)
var lockFileOf = lockInode
