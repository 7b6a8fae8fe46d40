package geo_test

import (
	"net/netip"
	"testing"
	"unicode"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// Markers for a field of namedPlace without one value to pin.
const (
	unchecked  = "\x00unchecked"
	anyChinese = "\x00a name in Chinese"
)

// namedPlace is what one address of the real data must answer in one
// language; an empty field must be empty.
type namedPlace struct {
	country, province, city, district, areaCode string
}

// namedPlaces are well-known addresses of the real DB-IP data, chosen
// from its largest networks, with the answer a complete implementation
// gives in each language. The English answer is the data's own (but for
// the "City (District)" split), so a failure there means the data moved:
// pick another address of the same place.
var namedPlaces = []struct {
	ip     string
	en, zh namedPlace
}{
	{"8.8.8.8",
		namedPlace{"United States", "California", "Mountain View", "", "1"},
		namedPlace{"美国", "加利福尼亚州", "山景城", "", "1"}},
	{"1.1.1.1",
		namedPlace{"Australia", "New South Wales", "Sydney", "", "61"},
		namedPlace{"澳大利亚", "新南威尔士州", "悉尼", "", "61"}},
	// DB-IP writes "Moscow (Tsentralnyy administrativnyy okrug)"; a district
	// with no Chinese name stays as the data spells it.
	{"77.88.8.8",
		namedPlace{"Russia", "Moscow", "Moscow", "Tsentralnyy administrativnyy okrug", "7"},
		namedPlace{"俄罗斯", "莫斯科", "莫斯科", "Tsentralnyy administrativnyy okrug", "7"}}, // no source names it in Chinese
	// Alibaba Cloud's 8.210.0.0/16: Kowloon / Hong Kong.
	{"8.210.0.1",
		namedPlace{"Hong Kong SAR China", "Kowloon", "Hong Kong", "", "852"},
		namedPlace{"中国香港特别行政区", anyChinese, anyChinese, "", "852"}},
	// 219.103.96.0/20: Tokyo / Tokyo.
	{"219.103.96.1",
		namedPlace{"Japan", "Tokyo", "Tokyo", "", "81"},
		namedPlace{"日本", "东京都", "东京", "", "81"}},
	// Amazon's sa-east-1, 15.229.0.0/16: Sao Paulo / Sao Paulo.
	{"15.229.0.1",
		namedPlace{"Brazil", "Sao Paulo", "Sao Paulo", "", "55"},
		namedPlace{"巴西", "圣保罗州", "圣保罗", "", "55"}},
	// China Telecom Henan's 1.192.0.0/17: "Guancheng", a district of
	// Zhengzhou (管城回族区): the city is its prefecture, the town the
	// district.
	{"1.192.0.1",
		namedPlace{"China", "Henan", "Zhengzhou", "Guancheng", "0371"},
		namedPlace{"中国", "河南省", "郑州市", "管城回族区", "0371"}},
}

// TestNamedPlaces looks up well-known addresses of the real dataset in
// both languages.
func TestNamedPlaces(t *testing.T) {
	dir := realdata.Dir(t)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, p := range namedPlaces {
		for _, lang := range langs {
			want := p.en
			if lang == ipatlas.Chinese {
				want = p.zh
			}
			r, err := e.Lookup(netip.MustParseAddr(p.ip), lang)
			if err != nil {
				t.Fatalf("%s %s: %v", p.ip, lang, err)
			}
			for _, f := range []struct{ name, got, want string }{
				{"country", r.Country, want.country},
				{"province", r.Province, want.province},
				{"city", r.City, want.city},
				{"district", r.District, want.district},
				{"area_code", r.AreaCode, want.areaCode},
			} {
				switch f.want {
				case unchecked:
				case anyChinese:
					if !chineseName(f.got) {
						t.Errorf("%s %s: %s %q, want a name in Chinese", p.ip, lang, f.name, f.got)
					}
				default:
					if f.got != f.want {
						t.Errorf("%s %s: %s %q, want %q", p.ip, lang, f.name, f.got, f.want)
					}
				}
			}
			checkLanguages(t, r, lang)
		}
	}
}

// chineseName reports whether s is written in Han characters, with no
// Latin letters.
func chineseName(s string) bool {
	han := false
	for _, r := range s {
		if unicode.Is(unicode.Latin, r) {
			return false
		}
		han = han || unicode.Is(unicode.Han, r)
	}
	return han
}
