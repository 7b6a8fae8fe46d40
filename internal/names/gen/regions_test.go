package main

import (
	"testing"

	"github.com/paulmach/orb"
)

// echartsEncode is ECharts' map compression, the inverse of
// decodeEChartsPolygon, written from its definition.
func echartsEncode(pts [][2]int) (string, [2]int) {
	var s []rune
	px, py := pts[0][0], pts[0][1]
	for _, p := range pts {
		dx, dy := p[0]-px, p[1]-py
		px, py = p[0], p[1]
		s = append(s, rune((dx<<1)^(dx>>31)+64), rune((dy<<1)^(dy>>31)+64))
	}
	return string(s), pts[0]
}

func TestDecodeECharts(t *testing.T) {
	pts := [][2]int{{116000, 40000}, {116010, 40000}, {116010, 39990}, {115995, 39993}}
	s, off := echartsEncode(pts)
	pg := decodeEChartsPolygon([]string{s}, [][2]int{off})
	if len(pg) != 1 || len(pg[0]) != len(pts)+1 {
		t.Fatalf("decoded %v", pg)
	}
	for i, p := range pts {
		want := orb.Point{float64(p[0]) / regionScale, float64(p[1]) / regionScale}
		if pg[0][i] != want {
			t.Errorf("point %d = %v, want %v", i, pg[0][i], want)
		}
	}
	if pg[0][len(pts)] != pg[0][0] {
		t.Error("the ring is not closed")
	}
}

func TestSameStem(t *testing.T) {
	dv := &divisions{
		cities: map[string][]division{"43": {{code: "4301", name: "长沙市"}, {code: "4305", name: "邵阳市"}}},
		counties: map[string][]division{"43": {
			{code: "430182", name: "宁乡市"}, {code: "430582", name: "邵东市"}, {code: "430102", name: "芙蓉区"},
		}},
	}
	for _, tt := range []struct{ prefecture, name, want string }{
		{"长沙", "宁乡县", "430182"},
		{"邵阳", "邵东县", "430582"},
		{"邵阳", "宁乡县", ""}, // another prefecture's
		{"长沙", "城区", ""},  // a one-character stem matches nothing
	} {
		got := sameStem(dv, "43", tt.prefecture, tt.name)
		if tt.want == "" && len(got) != 0 || tt.want != "" && (len(got) != 1 || got[0].code != tt.want) {
			t.Errorf("sameStem(%s, %s) = %v, want %q", tt.prefecture, tt.name, got, tt.want)
		}
	}
}

func TestCountyKey(t *testing.T) {
	for _, tt := range []struct{ zh, want string }{
		{"管城回族区", "guancheng"},
		{"南山区", "nanshan"},
		{"大厂回族自治县", "dachang"},
		{"长阳土家族自治县", "changyang"},
		{"双江拉祜族佤族布朗族傣族自治县", "shuangjiang"},
		{"浦东新区", "pudong"},
		{"神农架林区", "shennongjia"},
		{"绿园区", "luyuan"}, // ü is written u
		{"城区", "cheng"},   // a one-character stem
		{"沛县", "pei"},
		{"", ""},
	} {
		if got := countyKey(tt.zh); got != tt.want {
			t.Errorf("countyKey(%q) = %q, want %q", tt.zh, got, tt.want)
		}
	}
}
