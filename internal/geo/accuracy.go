package geo

import (
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/accuracy"
)

// accuracyOf is the radius in km and the confidence (package accuracy) of
// an answer with city part c from source; 0 and "" when c has no
// coordinates.
func accuracyOf(c *cityData, source string) (int, string) {
	if c == nil || !c.hasCoords {
		return 0, ""
	}
	k := accuracy.Dataset
	if source == SourceOverride || strings.HasPrefix(source, SourceFeedPrefix) {
		k = accuracy.Correction
	}
	cont := ""
	if c.country != nil {
		cont = c.country.continentCode
	}
	return accuracy.Of(k, cont, c.text[ipatlas.English].city != "")
}
