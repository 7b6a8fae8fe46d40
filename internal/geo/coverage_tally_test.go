package geo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
)

func TestCoverageTally(t *testing.T) {
	tl := newCoverageTally()
	add := func(en, zh ipatlas.Record) { tl.add(&en, &zh) }
	// Outside China: a province and city in Chinese, one in English.
	add(ipatlas.Record{CountryCode: "US", Province: "California", City: "Mountain View"},
		ipatlas.Record{CountryCode: "US", Province: "加利福尼亚州", City: "山景城", AreaCode: "1"})
	add(ipatlas.Record{CountryCode: "FR", Province: "Île-de-France", City: "Paris (Centre)", District: "Paris"},
		ipatlas.Record{CountryCode: "FR", Province: "Île-de-France", City: "巴黎 (Centre)", District: "巴黎"})
	add(ipatlas.Record{CountryCode: "FR", Province: "Île-de-France", City: "Paris (Centre)"},
		ipatlas.Record{CountryCode: "FR", Province: "Île-de-France", City: "Paris (Centre)"})
	// China: a city with its code, a town with neither.
	add(ipatlas.Record{CountryCode: "CN", Province: "Guangdong", City: "Shenzhen"},
		ipatlas.Record{CountryCode: "CN", Province: "广东省", City: "深圳市", AreaCode: "0755"})
	add(ipatlas.Record{CountryCode: "CN", Province: "Henan", City: "Guancheng"},
		ipatlas.Record{CountryCode: "CN", Province: "河南省", City: "Guancheng", AreaCode: "86"})
	// Unlocated, and located to a country only.
	add(ipatlas.Record{}, ipatlas.Record{})
	add(ipatlas.Record{CountryCode: "SG"}, ipatlas.Record{CountryCode: "SG"})

	got := map[string][3]int{}
	missing := map[string][]CoverageValue{}
	for _, m := range tl.measures() {
		got[m.Name] = [3]int{m.Hit, m.Of, int(m.Goal)}
		missing[m.Name] = m.Missing
	}
	want := map[string][3]int{
		MeasureLocated:       {6, 7, 0},
		MeasureProvinceZh:    {1, 3, 95},
		MeasureCityZh:        {1, 3, 80},
		MeasureChinaCityZh:   {1, 2, 100},
		MeasureChinaAreaCode: {1, 2, 100},
		MeasureCityPlain:     {3, 5, 100},
		MeasureDistrict:      {1, 6, 0},
		MeasureDistrictZh:    {1, 1, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	wantMissing := map[string][]CoverageValue{
		MeasureProvinceZh:    {{"FR Île-de-France", 2}},
		MeasureCityZh:        {{"FR Île-de-France / Paris (Centre)", 2}},
		MeasureChinaCityZh:   {{"Henan / Guancheng", 1}},
		MeasureChinaAreaCode: {{"Henan / Guancheng", 1}},
		MeasureCityPlain:     {{"FR Paris (Centre)", 2}},
	}
	for name, m := range missing {
		if !reflect.DeepEqual(m, wantMissing[name]) && (len(m) > 0 || len(wantMissing[name]) > 0) {
			t.Errorf("%s missing %v, want %v", name, m, wantMissing[name])
		}
	}
}

func TestCoverageTopMissing(t *testing.T) {
	m := map[string]int{"b": 2, "a": 2, "c": 5, "d": 1}
	if got, want := top(m, 3), []CoverageValue{{"c", 5}, {"a", 2}, {"b", 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("top: %v, want %v", got, want)
	}
}

func TestIsChinese(t *testing.T) {
	for s, want := range map[string]bool{"山景城": true, "中国香港特别行政区": true, "圣保罗州": true, "": false,
		"Paris": false, "巴黎 (Centre)": false, "東京": true, "とうきょう": false, "Île": false} {
		if got := isChinese(s); got != want {
			t.Errorf("isChinese(%q) = %v", s, got)
		}
	}
}

// The report's first line says "address" for a sample of one.
func TestCoverageReportHeadline(t *testing.T) {
	for _, tt := range []struct {
		v4, v6 int
		want   string
	}{{1, 0, "1 address (1 IPv4, 0 IPv6)"}, {1, 1, "2 addresses (1 IPv4, 1 IPv6)"}} {
		var b strings.Builder
		r := &CoverageReport{IPv4: tt.v4, IPv6: tt.v6, ASNFiles: []string{"asn.mmdb"}}
		if err := r.Write(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), tt.want+" drawn") {
			t.Errorf("headline %q, want %q", strings.SplitN(b.String(), "\n", 2)[0], tt.want)
		}
	}
}
