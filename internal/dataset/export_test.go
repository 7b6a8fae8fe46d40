package dataset

// TmpPrefix lets the external tests check that no temporary file is left.
const TmpPrefix = tmpPrefix
