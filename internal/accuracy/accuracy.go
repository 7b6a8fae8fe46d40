// Package accuracy is the model of how right a located answer is: every
// answer with coordinates states a radius, in km, and a confidence level.
//
// The radius of a dataset answer that names a city is the smallest that
// held 85% of the errors (the distance between the answered point and the
// true one) of such answers on ground truth that none of the sources
// wrote, RIPE Atlas probes and anchors (../shared/data/truth), by the
// continent group of the answer: table.go, which TestRealTable derives
// from the truth and the real dataset. docs/accuracy.md gives the
// derivation, the signals tried and the measures. The other kinds of
// answer have no ground truth to be measured on and state a class:
//
//   - a correction (an override, the operator's word, or a published
//     feed, the network's own) names the place the network is in:
//     CorrectionRadius, confidence high;
//   - a dataset answer that names a city: its group's radius, confidence
//     medium;
//   - a dataset answer without a city (a region's or a country's point):
//     CoarseRadius, confidence low.
package accuracy

import "github.com/ipatlas/ipatlas"

// The radii of the answers that have no ground truth, in km: a class.
const (
	CorrectionRadius = 50
	CoarseRadius     = 1000
)

// Kinds of answer.
const (
	Dataset    = iota // the dataset's location
	Correction        // an override's or a published feed's
)

// The continent groups: the continents with enough ground truth for a
// radius of their own, and the rest together.
const (
	GroupEurope = iota
	GroupNorthAmerica
	GroupAsia
	GroupOther
	Groups
)

// GroupNames name the groups.
var GroupNames = [Groups]string{"EU", "NA", "AS", "other (AF, OC, SA, AN)"}

// Group is the continent group of a continent code.
func Group(continentCode string) int {
	switch continentCode {
	case "EU":
		return GroupEurope
	case "NA":
		return GroupNorthAmerica
	case "AS":
		return GroupAsia
	}
	return GroupOther
}

// Of is the radius in km and the confidence of a located answer of kind
// k, on continent continentCode, that names a city or not.
func Of(k int, continentCode string, hasCity bool) (int, string) {
	switch {
	case k == Correction:
		return CorrectionRadius, ipatlas.ConfidenceHigh
	case !hasCity:
		return CoarseRadius, ipatlas.ConfidenceLow
	}
	return CityRadius[Group(continentCode)], ipatlas.ConfidenceMedium
}
