package geo

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
)

func TestSplitDistrict(t *testing.T) {
	tests := []struct{ in, city, district string }{
		{"Seoul (Toegye-ro)", "Seoul", "Toegye-ro"},
		{"Moscow (Tsentralnyy administrativnyy okrug)", "Moscow", "Tsentralnyy administrativnyy okrug"},
		{"San Jose (Tasman and Zanker)", "San Jose", "Tasman and Zanker"},
		{"Guangzhou (Yuexiu Qu)", "Guangzhou", "Yuexiu Qu"},
		{"  Guangzhou  ( Yuexiu Qu )  ", "Guangzhou", "Yuexiu Qu"},
		{"Guangzhou(Yuexiu Qu)", "Guangzhou", "Yuexiu Qu"},
		{"Mountain View", "Mountain View", ""},
		{"", "", ""},
		// Nested: the outer pair is the district.
		{"A (B (C))", "A", "B (C)"},
		// The last top-level pair.
		{"A (B) (C)", "A (B)", "C"},
		// Text after the bracket: not the form, all city.
		{"A (B) C", "A (B) C", ""},
		// Unbalanced.
		{"A B)", "A B)", ""},
		{"A (B))", "A (B))", ""},
		{"Seoul (Toegye-ro", "Seoul", "Toegye-ro"},
		{"Seoul (", "Seoul", ""},
		// Empty parts never lose the city.
		{"Seoul ()", "Seoul", ""},
		{"(Toegye-ro)", "Toegye-ro", ""},
		{"()", "()", ""},
		{"(", "(", ""},
		{")", ")", ""},
	}
	for _, tt := range tests {
		city, district := splitDistrict(tt.in)
		if city != tt.city || district != tt.district {
			t.Errorf("splitDistrict(%q) = %q, %q; want %q, %q", tt.in, city, district, tt.city, tt.district)
		}
	}
}

// TestComposeDistrict: the bracket's district reaches the record in both
// languages, a district the data gives on its own wins, and China's
// towns resolve to their prefecture-level city.
func TestComposeDistrict(t *testing.T) {
	nan := math.NaN()
	var countries countryTable
	tests := []struct {
		name                         string
		in                           cityInput
		enCity, enDistrict           string
		zhCity, zhDistrict, areaCode string
	}{
		{"bracket", cityInput{countryCode: "KR", province: localNames{EN: "Seoul"}, city: localNames{EN: "Seoul (Toegye-ro)"}, lat: 37.56, lon: 126.98},
			"Seoul", "Toegye-ro", "首尔", "Toegye-ro", "82"},
		{"separate district wins", cityInput{countryCode: "US", city: localNames{EN: "Ashburn (Loudoun)"}, district: localNames{EN: "Loudoun County"}, lat: nan, lon: nan},
			"Ashburn", "Loudoun County", "Ashburn", "Loudoun County", "1"},
		{"zh from the file", cityInput{countryCode: "JP", city: localNames{EN: "Tokyo (Chiyoda)", ZH: "东京 (千代田区)"}, lat: nan, lon: nan},
			"Tokyo", "Chiyoda", "东京", "千代田区", "81"},
		{"a place's own name", cityInput{countryCode: "DE", province: localNames{EN: "Brandenburg"}, city: localNames{EN: "Frankfurt (Oder)"}, lat: 52.34, lon: 14.55},
			"Frankfurt (Oder)", "", "Frankfurt (Oder)", "", "49"},
		{"a place's own name and a district", cityInput{countryCode: "DE", province: localNames{EN: "Brandenburg"}, city: localNames{EN: "Frankfurt (Oder) (Altberesinchen)"}, lat: 52.34, lon: 14.55},
			"Frankfurt (Oder)", "Altberesinchen", "Frankfurt (Oder)", "Altberesinchen", "49"},
		{"China bracket", cityInput{countryCode: "CN", province: localNames{EN: "Guangdong"}, city: localNames{EN: "Wushipai (Nanshan Qu)"}, lat: 22.5138, lon: 113.908},
			"Shenzhen", "Nanshan", "深圳市", "南山区", "0755"},
		{"China town", cityInput{countryCode: "CN", province: localNames{EN: "Henan"}, city: localNames{EN: "Guancheng"}, lat: 34.7657, lon: 113.753},
			"Zhengzhou", "Guancheng", "郑州市", "管城回族区", "0371"},
		{"China city", cityInput{countryCode: "CN", province: localNames{EN: "Guangdong"}, city: localNames{EN: "Guangzhou"}, lat: 23.1317, lon: 113.266},
			"Guangzhou", "", "广州市", "", "020"},
	}
	for _, tt := range tests {
		d := compose(tt.in, &countries)
		en, zh := d.text[ipatlas.English], d.text[ipatlas.Chinese]
		if en.city != tt.enCity || en.district != tt.enDistrict || zh.city != tt.zhCity || d.areaCode != tt.areaCode {
			t.Errorf("%s: en %q/%q, zh %q/%q, area %q; want en %q/%q, zh %q, area %q",
				tt.name, en.city, en.district, zh.city, zh.district, d.areaCode, tt.enCity, tt.enDistrict, tt.zhCity, tt.areaCode)
		}
		if tt.zhDistrict != "" && zh.district != tt.zhDistrict {
			t.Errorf("%s: zh district %q, want %q", tt.name, zh.district, tt.zhDistrict)
		}
		if tt.enDistrict != "" && zh.district == "" {
			t.Errorf("%s: a district in English (%q) but none in Chinese", tt.name, en.district)
		}
		if tt.zhDistrict == "" && tt.enDistrict != "" && (!hasHan(zh.district) || !strings.HasSuffix(zh.district, "区") && !strings.HasSuffix(zh.district, "县") && !strings.HasSuffix(zh.district, "市")) {
			t.Errorf("%s: zh district %q is no Chinese county", tt.name, zh.district)
		}
	}
}

// FuzzCompose: any names compose without a panic; the split never loses
// the city nor invents text; English output gains no Chinese characters
// the input did not have.
func FuzzCompose(f *testing.F) {
	f.Add("CN", "Guangdong", "Wushipai (Nanshan Qu)", "", 22.5138, 113.908)
	f.Add("CN", "Henan", "Guancheng", "", 34.7657, 113.753)
	f.Add("KR", "Seoul", "Seoul (Toegye-ro)", "", 37.56, 126.98)
	f.Add("US", "California", "San Jose (Tasman and Zanker", "Santa Clara", 37.33, -121.89)
	f.Add("CN", "", "((()", ")", math.NaN(), math.NaN())
	f.Add("CN", "Beijing", "(Xicheng District)", "", 39.92, 116.36)
	// Build the process-wide time-zone finders and China's boundaries
	// now: under the fuzzer's instrumentation their first use would stall
	// the first inputs.
	warmTimeZones()
	var warm countryTable
	compose(cityInput{countryCode: "CN", province: localNames{EN: "Henan"}, city: localNames{EN: "Guancheng"}, lat: 34.7657, lon: 113.753}, &warm)
	f.Fuzz(func(t *testing.T, country, province, city, district string, lat, lon float64) {
		var countries countryTable
		c, dist := splitDistrict(city)
		if strings.TrimSpace(city) != "" && c == "" {
			t.Errorf("splitDistrict(%q) lost the city", city)
		}
		if len(c)+len(dist) > len(strings.TrimSpace(city)) {
			t.Errorf("splitDistrict(%q) = %q, %q: more text than it was given", city, c, dist)
		}
		if !strings.ContainsRune(city, '(') && (c != strings.TrimSpace(city) || dist != "") {
			t.Errorf("splitDistrict(%q) = %q, %q without a bracket", city, c, dist)
		}
		if !utf8.ValidString(city) {
			return
		}
		d := compose(cityInput{countryCode: country, province: localNames{EN: province}, city: localNames{EN: city},
			district: localNames{EN: district}, lat: lat, lon: lon}, &countries)
		en := d.text[ipatlas.English]
		// Joined with a separator: two invalid fragments of UTF-8 side by
		// side ("\xe9" and "\xac\x9a") would read as one Han character.
		if !hasHan(province+"|"+city+"|"+district) && hasHan(en.province+"|"+en.city+"|"+en.district) {
			t.Errorf("English %+v has Chinese characters the input %q %q %q has not", en, province, city, district)
		}
		if strings.TrimSpace(city) != "" && (en.city == "" && !hasHan(city)) {
			t.Errorf("city %q lost in English", city)
		}
	})
}
