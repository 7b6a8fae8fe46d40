package geo

import (
	"math"
	"testing"
)

func TestTimeZoneOf(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name      string
		cc        string
		lat, lon  float64
		hasCoords bool
		want      string
	}{
		// One zone: the country's, whatever the point; tzf's polygons put
		// Hanoi in Asia/Bangkok.
		{"single-zone country", "VN", 21.0285, 105.8542, true, "Asia/Ho_Chi_Minh"},
		{"single-zone country without coordinates", "GH", nan, nan, false, "Africa/Accra"},
		{"code outside zone.tab", "XK", 42.6629, 21.1655, true, "Europe/Belgrade"},
		// Several zones: the point decides.
		{"east coast", "US", 40.7128, -74.0060, true, "America/New_York"},
		{"west coast", "US", 34.0522, -118.2437, true, "America/Los_Angeles"},
		{"Vladivostok", "RU", 43.1155, 131.8855, true, "Asia/Vladivostok"},
		{"Beijing", "CN", 39.9042, 116.4074, true, "Asia/Shanghai"},
		{"several zones, no coordinates", "US", nan, nan, false, ""},
		{"no country: the point", "", 55.7558, 37.6173, true, "Europe/Moscow"},
		{"no country, no coordinates", "", nan, nan, false, ""},
	} {
		if got := timeZoneOf(c.cc, c.lat, c.lon, c.hasCoords); got != c.want {
			t.Errorf("%s: timeZoneOf(%q, %v, %v) = %q, want %q", c.name, c.cc, c.lat, c.lon, got, c.want)
		}
	}
}

func TestMultiZoneNames(t *testing.T) {
	m := multiZoneNames()
	for _, z := range []string{"America/New_York", "Asia/Urumqi", "Europe/Moscow", "Australia/Perth"} {
		if !m[z] {
			t.Errorf("%s (a country with several zones) is missing", z)
		}
	}
	for _, z := range []string{"Europe/Paris", "Asia/Tokyo", "Asia/Ho_Chi_Minh", "Etc/GMT+5"} {
		if m[z] {
			t.Errorf("%s (a single-zone country or no country) is kept", z)
		}
	}
}
