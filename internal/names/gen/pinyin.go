package main

import (
	"runtime/debug"
	"strings"

	"github.com/mozillazg/go-pinyin"
)

// A county's key is its name as the IP data's English spellings fold to
// it, so that a place the data names can be told to be a county of its
// city: the Hanyu Pinyin of the name without the word for its kind and
// without the peoples of an autonomous county, lower case, with no tones,
// spaces or apostrophes, ü written u (管城回族区 guancheng, 南山区 nanshan,
// 长阳土家族自治县 changyang). The runtime side is foldPinyin in
// internal/names/china.go.

// countyKinds are the words for a county's kind, longest first among those
// that end alike.
var countyKinds = []string{"自治县", "自治旗", "特区", "林区", "新区", "区", "县", "市", "旗"}

// peoples are China's minority nationalities, as an autonomous county's
// name lists them before 族.
var peoples = []string{
	"蒙古", "回", "藏", "维吾尔", "苗", "彝", "壮", "布依", "朝鲜", "满", "侗", "瑶", "白", "土家",
	"哈尼", "哈萨克", "傣", "黎", "傈僳", "佤", "畲", "高山", "拉祜", "水", "东乡", "纳西", "景颇",
	"柯尔克孜", "土", "达斡尔", "仫佬", "羌", "布朗", "撒拉", "毛南", "仡佬", "锡伯", "阿昌", "普米",
	"塔吉克", "怒", "乌孜别克", "俄罗斯", "鄂温克", "德昂", "保安", "裕固", "京", "塔塔尔", "独龙",
	"鄂伦春", "赫哲", "门巴", "珞巴", "基诺",
}

// countyKey is the key of a county's Chinese name, "" for no name. A stem
// of one character is a key too (沛县 pei, 城区 cheng): the data's
// "Peixian" and "Chengqu" fold to it at lookup.
func countyKey(zh string) string {
	if zh == "" {
		return ""
	}
	stem := zh
	for _, k := range countyKinds {
		if t, ok := strings.CutSuffix(stem, k); ok {
			stem = t
			break
		}
	}
	for strings.HasSuffix(stem, "族") {
		best := ""
		for _, p := range peoples {
			if strings.HasSuffix(stem, p+"族") && len(p) > len(best) {
				best = p
			}
		}
		if best == "" {
			break
		}
		stem = strings.TrimSuffix(stem, best+"族")
	}
	if stem == "" {
		stem = zh
	}
	a := pinyin.NewArgs() // Normal style: no tones, ü as v
	var b strings.Builder
	for _, r := range stem {
		py, ok := placeReadings[r]
		if !ok {
			ps := pinyin.LazyPinyin(string(r), a)
			if len(ps) != 1 {
				// A character with no reading: no key rather than a
				// wrong one.
				return ""
			}
			py = ps[0]
		}
		b.WriteString(strings.ReplaceAll(py, "v", "u"))
	}
	return b.String()
}

// placeReadings are the readings place names give characters whose first
// reading in go-pinyin's dictionary is another (长沙 Changsha, 都江堰
// Dujiangyan, 单县 Shanxian, 番禺 Panyu, 厦门 Xiamen, 浚县 Xunxian, 涡阳
// Guoyang, 什邡 Shifang, 铅山 Yanshan). Characters read two ways in place
// names (乐清 Yueqing, 乐山 Leshan) keep go-pinyin's reading: a wrong key
// matches nothing, and the county that contains the place applies.
var placeReadings = map[rune]string{
	'长': "chang", '都': "du", '单': "shan", '番': "pan", '重': "chong",
	'厦': "xia", '浚': "xun", '涡': "guo", '什': "shi", '佛': "fo", '铅': "yan",
}

// pinyinModule names the go-pinyin module the generator is built with,
// and so the readings the keys come from.
func pinyinModule() string {
	const path = "github.com/mozillazg/go-pinyin"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return path + "@" + m.Version
			}
		}
	}
	return path
}
