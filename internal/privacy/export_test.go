package privacy

// Coverage is coverage, for the tests of the bounds.
var Coverage = coverage
