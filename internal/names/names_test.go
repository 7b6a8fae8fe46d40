package names

import (
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // every generated zone must load, whatever the machine has

	"github.com/ipatlas/ipatlas"
	"github.com/nyaruka/phonenumbers"
	"golang.org/x/text/language"
)

var (
	en = ipatlas.English
	zh = ipatlas.Chinese
)

func TestCountries(t *testing.T) {
	tests := []struct {
		code, en, zh, continent, currency, area string
	}{
		{"US", "United States", "美国", "NA", "USD", "1"},
		{"GB", "United Kingdom", "英国", "EU", "GBP", "44"},
		{"JP", "Japan", "日本", "AS", "JPY", "81"},
		{"CN", "China", "中国", "AS", "CNY", "86"},
		{"DE", "Germany", "德国", "EU", "EUR", "49"},
		{"HK", "Hong Kong SAR China", "中国香港特别行政区", "AS", "HKD", "852"},
		{"MO", "Macau SAR China", "中国澳门特别行政区", "AS", "MOP", "853"},
		{"TW", "Taiwan", "台湾", "AS", "TWD", "886"},
		{"BR", "Brazil", "巴西", "SA", "BRL", "55"},
		{"AU", "Australia", "澳大利亚", "OC", "AUD", "61"},
		{"EG", "Egypt", "埃及", "AF", "EGP", "20"},
		{"AQ", "Antarctica", "南极洲", "AN", "", ""},
		{"XK", "Kosovo", "科索沃", "EU", "EUR", "383"},
		{"EU", "European Union", "欧盟", "EU", "EUR", ""},
		{"us", "United States", "美国", "NA", "USD", "1"}, // lower case is accepted
	}
	for _, tt := range tests {
		if got := Country(tt.code, en); got != tt.en {
			t.Errorf("Country(%q, en) = %q, want %q", tt.code, got, tt.en)
		}
		if got := Country(tt.code, zh); got != tt.zh {
			t.Errorf("Country(%q, zh) = %q, want %q", tt.code, got, tt.zh)
		}
		if got := ContinentCode(tt.code); got != tt.continent {
			t.Errorf("ContinentCode(%q) = %q, want %q", tt.code, got, tt.continent)
		}
		if got := Currency(tt.code); got != tt.currency {
			t.Errorf("Currency(%q) = %q, want %q", tt.code, got, tt.currency)
		}
		if got := AreaCode(tt.code, "", "", nan, nan); got != tt.area {
			t.Errorf("AreaCode(%q) = %q, want %q", tt.code, got, tt.area)
		}
	}
}

// Every country's calling code is libphonenumber's, which the generated
// table copies, and every region of the table is one libphonenumber knows.
func TestCallingCodesAreLibphonenumbers(t *testing.T) {
	for code := range countryTable() {
		want := ""
		if n := phonenumbers.GetCountryCodeForRegion(code); n > 0 {
			want = strconv.Itoa(n)
		}
		if got := AreaCode(code, "", "", nan, nan); got != want {
			t.Errorf("AreaCode(%q) = %q, libphonenumber says %q", code, got, want)
		}
	}
	for _, c := range callingCodes {
		if n := phonenumbers.GetCountryCodeForRegion(c.region); strconv.Itoa(n) != c.code {
			t.Errorf("callingCodes has %s %s, libphonenumber says %d", c.region, c.code, n)
		}
	}
}

func TestUnknownCountries(t *testing.T) {
	for _, code := range []string{"", "ZZ", "AP", "A1", "A2", "O1", "XX", "U", "USA", "1", "  ", "\x00\x00", "日本"} {
		if got := Country(code, en) + Country(code, zh) + ContinentCode(code) + Currency(code) + AreaCode(code, "Beijing", "Beijing", nan, nan); got != "" {
			t.Errorf("%q: got %q, want nothing", code, got)
		}
		if TimeZones(code) != nil {
			t.Errorf("TimeZones(%q) = %v, want nil", code, TimeZones(code))
		}
	}
}

// TestEveryISOCountry runs over the ISO 3166-1 alpha-2 list of the IANA tz
// database (iso3166.tab, generated into isoCountries).
func TestEveryISOCountry(t *testing.T) {
	if len(isoCountries) < 245 {
		t.Fatalf("only %d ISO countries", len(isoCountries))
	}
	valid := map[string]bool{"AF": true, "AN": true, "AS": true, "EU": true, "NA": true, "OC": true, "SA": true}
	for _, code := range isoCountries {
		r, err := language.ParseRegion(code)
		if err != nil || r.String() != code || !r.IsCountry() {
			t.Errorf("%s: CLDR does not know it as a country (%v, %v)", code, r, err)
		}
		e, c := Country(code, en), Country(code, zh)
		if e == "" || c == "" {
			t.Errorf("%s: names %q, %q", code, e, c)
		}
		if hasHan(e) {
			t.Errorf("%s: English name %q has Chinese characters", code, e)
		}
		if !hasHan(c) || c == e {
			t.Errorf("%s: Chinese name %q is not Chinese (English %q)", code, c, e)
		}
		if !valid[ContinentCode(code)] {
			t.Errorf("%s: continent %q", code, ContinentCode(code))
		}
		if cur := Currency(code); cur != "" && !regexp.MustCompile(`^[A-Z]{3}$`).MatchString(cur) {
			t.Errorf("%s: currency %q", code, cur)
		}
		if a := AreaCode(code, "", "", nan, nan); a != "" && !regexp.MustCompile(`^[1-9][0-9]{0,2}$`).MatchString(a) {
			t.Errorf("%s: calling code %q", code, a)
		}
	}
}

func TestContinents(t *testing.T) {
	names := map[string][2]string{
		"AF": {"Africa", "非洲"},
		"AN": {"Antarctica", "南极洲"},
		"AS": {"Asia", "亚洲"},
		"EU": {"Europe", "欧洲"},
		"NA": {"North America", "北美洲"},
		"OC": {"Oceania", "大洋洲"},
		"SA": {"South America", "南美洲"},
	}
	for code, n := range names {
		if got := Continent(code, en); got != n[0] {
			t.Errorf("Continent(%q, en) = %q, want %q", code, got, n[0])
		}
		if got := Continent(code, zh); got != n[1] {
			t.Errorf("Continent(%q, zh) = %q, want %q", code, got, n[1])
		}
	}
	if got := Continent("XX", zh); got != "" {
		t.Errorf("Continent(XX) = %q", got)
	}
	// CLDR's 003 North America holds Central America and the Caribbean;
	// Russia is in Eastern Europe; the sub-Antarctic islands follow the
	// GeoIP convention.
	for code, want := range map[string]string{
		"MX": "NA", "PA": "NA", "GT": "NA", "CU": "NA", "JM": "NA", "PR": "NA", "GL": "NA", "CA": "NA",
		"CO": "SA", "AR": "SA", "FK": "SA",
		"RU": "EU", "FR": "EU", "TR": "AS", "IN": "AS", "NZ": "OC", "FJ": "OC", "UM": "OC",
		"ZA": "AF", "MA": "AF", "BV": "AN", "GS": "AN", "HM": "AN", "TF": "AN", "AQ": "AN",
		// Where CLDR's containment and GeoNames (and so MaxMind) disagree,
		// GeoNames: CLDR says AS, AF, OC, OC and AS.
		"CY": "EU", "IO": "AS", "CX": "AS", "CC": "AS", "TL": "OC",
		// Where they agree, across the usual borders.
		"AM": "AS", "AZ": "AS", "GE": "AS", "KZ": "AS", "EG": "AF", "TT": "NA", "IS": "EU", "MV": "AS",
	} {
		if got := ContinentCode(code); got != want {
			t.Errorf("ContinentCode(%q) = %q, want %q", code, got, want)
		}
	}
}

func TestChina(t *testing.T) {
	tests := []struct {
		province, city     string
		zhProvince, zhCity string
		area               string
	}{
		{"Beijing", "Beijing", "北京市", "北京市", "010"},
		{"Shanghai", "Shanghai", "上海市", "上海市", "021"},
		{"Tianjin", "Tianjin", "天津市", "天津市", "022"},
		{"Chongqing", "Chongqing", "重庆市", "重庆市", "023"},
		{"Guangdong", "Shenzhen", "广东省", "深圳市", "0755"},
		{"Guangdong", "Guangzhou", "广东省", "广州市", "020"},
		{"Sichuan", "Chengdu", "四川省", "成都市", "028"},
		{"Shandong", "Jinan", "山东省", "济南市", "0531"},
		{"Zhejiang", "Hangzhou", "浙江省", "杭州市", "0571"},
		{"Jilin", "Jilin", "吉林省", "吉林市", "0432"},
		{"Inner Mongolia", "Hohhot", "内蒙古自治区", "呼和浩特市", "0471"},
		{"Guangxi", "Nanning", "广西壮族自治区", "南宁市", "0771"},
		{"Tibet", "Lhasa", "西藏自治区", "拉萨市", "0891"},
		{"Xinjiang", "Urumqi", "新疆维吾尔自治区", "乌鲁木齐市", "0991"},
		{"Ningxia", "Yinchuan", "宁夏回族自治区", "银川市", "0951"},
		// The IP data's spellings and decorations.
		{"Shaanxi", "Xi'an", "陕西省", "西安市", "029"},
		{"Shaanxi", "Xi'an (Weiyang Qu)", "陕西省", "西安市", "029"},
		{"Sichuan", "Guang’an", "四川省", "广安市", "0826"},
		{"Anhui", "Lu'an", "安徽省", "六安市", "0564"},
		{"Anhui", "Huangshan City", "安徽省", "黄山市", "0559"},
		{"Shaanxi", "Xianyangshi (Yanta Qu)", "陕西省", "咸阳市", "029"},
		{"Guangdong", "Guangzhou (Yuexiu Qu)", "广东省", "广州市", "020"},
		{"Xinjiang", "Huiyuan (Yining)", "新疆维吾尔自治区", "伊犁哈萨克自治州", "0999"},
		{"Inner Mongolia", "Hulunbuir (Hailar District)", "内蒙古自治区", "呼伦贝尔市", "0470"},
		{"Hubei", "Xiangyang", "湖北省", "襄阳市", "0710"},
		{"Hubei", "Xiangfan", "湖北省", "襄阳市", "0710"},
		{"Shanxi", "Luliang", "山西省", "吕梁市", "0358"},
		{"Guizhou", "Bijie", "贵州省", "毕节市", "0857"},
		// A seat town: its prefecture, with the town's own code.
		{"Xinjiang", "Kuitun", "新疆维吾尔自治区", "伊犁哈萨克自治州", "0992"},
		{"Qinghai", "Golmud", "青海省", "海西蒙古族藏族自治州", "0979"},
		// Hainan, which libphonenumber geocodes as Haikou only, shares 0898.
		{"Hainan", "Sanya", "海南省", "三亚市", "0898"},
		{"Hainan", "Qionghai", "海南省", "Qionghai", "0898"},
		// Municipalities: every place is in the city.
		{"Beijing", "Jinrongjie (Xicheng District)", "北京市", "北京市", "010"},
		{"Shanghai", "Pudong (Pudong Xinqu)", "上海市", "上海市", "021"},
		// Unknown towns keep their English name; the area code is the country's.
		{"Fujian", "Wenquan", "福建省", "Wenquan", "86"},
		{"Guangdong", "", "广东省", "", "86"},
		{"", "Shenzhen", "", "Shenzhen", "86"},
		{"Atlantis", "Shenzhen", "Atlantis", "Shenzhen", "86"},
		// A Jinan in the wrong province is no Jinan.
		{"Guangdong", "Jinan", "广东省", "Jinan", "86"},
		// ISO 3166-2 and GeoNames forms of the province names.
		{"Nei Mongol", "Baotou", "内蒙古自治区", "包头市", "0472"},
		{"Xizang", "Lhasa", "西藏自治区", "拉萨市", "0891"},
		{"Guangxi Zhuang Autonomous Region", "Guilin", "广西壮族自治区", "桂林市", "0773"},
		{"Jilin Sheng", "Changchun", "吉林省", "长春市", "0431"},
		{"Beijing Shi", "Beijing", "北京市", "北京市", "010"},
	}
	for _, tt := range tests {
		if got := Province("CN", tt.province, zh); got != tt.zhProvince {
			t.Errorf("Province(CN, %q, zh) = %q, want %q", tt.province, got, tt.zhProvince)
		}
		if got := City("CN", tt.province, tt.city, nan, nan, zh); got != tt.zhCity {
			t.Errorf("City(CN, %q, %q, zh) = %q, want %q", tt.province, tt.city, got, tt.zhCity)
		}
		if got := AreaCode("CN", tt.province, tt.city, nan, nan); got != tt.area {
			t.Errorf("AreaCode(CN, %q, %q, nan, nan) = %q, want %q", tt.province, tt.city, got, tt.area)
		}
		// English output is the input, untouched, but for a place of a
		// municipality, which is in the city.
		if got := Province("CN", tt.province, en); got != tt.province {
			t.Errorf("Province(CN, %q, en) = %q", tt.province, got)
		}
		wantEN := tt.city
		if m, ok := municipalityPlaces[tt.city]; ok {
			wantEN = m
		}
		if got := City("CN", tt.province, tt.city, nan, nan, en); got != wantEN {
			t.Errorf("City(CN, %q, %q, en) = %q, want %q", tt.province, tt.city, got, wantEN)
		}
	}
}

var municipalityPlaces = map[string]string{
	"Jinrongjie (Xicheng District)": "Beijing",
	"Pudong (Pudong Xinqu)":         "Shanghai",
}

// TestChinaByCoordinates: towns the tables do not know resolve, by the
// county boundaries that contain their coordinates (those of DB-IP's
// records), to their prefecture-level city and its area code; the town
// becomes the district, named by its county in Chinese.
func TestChinaByCoordinates(t *testing.T) {
	tests := []struct {
		province, city, district string
		lat, lon                 float64
		enCity, zhCity, area     string
		enDistrict, zhDistrict   string
	}{
		// A town that is a county's name is that county, though its
		// coordinates lie in 金水区 (TestChinaDistrictByName).
		{"Henan", "Guancheng", "", 34.7657, 113.753, "Zhengzhou", "郑州市", "0371", "Guancheng", "管城回族区"},
		// No county of 太原市 is called Liuxiang: the one containing it.
		{"Shanxi", "Liuxiang", "", 37.8734, 112.563, "Taiyuan", "太原市", "0351", "Liuxiang", "杏花岭区"},
		// Yunan spells both 郁南县 and 云安区 of 云浮市: no choice by name,
		// the county containing the point (in 云安区).
		{"Guangdong", "Yunan", "", 23.07, 112.0, "Yunfu", "云浮市", "0766", "Yunan", "云安区"},
		{"Hubei", "Shizishan", "", 30.5454, 114.342, "Wuhan", "武汉市", "027", "Shizishan", "*"},
		{"Fujian", "Wenquan", "", 26.0998, 119.297, "Fuzhou", "福州市", "0591", "Wenquan", "*"},
		{"Xinjiang", "Xingfulu", "", 43.7934, 87.6271, "Urumchi", "乌鲁木齐市", "0991", "Xingfulu", "*"},
		// A district the data gives in brackets.
		{"Guangdong", "Wushipai", "Nanshan Qu", 22.5138, 113.908, "Shenzhen", "深圳市", "0755", "Nanshan", "南山区"},
		{"Beijing", "Jinrongjie", "Xicheng District", 39.9236, 116.36, "Beijing", "北京市", "010", "Xicheng", "西城区"},
		// A city the tables know keeps its English name and gains no
		// district of its own.
		{"Guangdong", "Guangzhou", "", 23.1317, 113.266, "Guangzhou", "广州市", "020", "", ""},
		{"Guangdong", "Guangzhou", "Yuexiu Qu", 23.1291, 113.264, "Guangzhou", "广州市", "020", "Yuexiu", "越秀区"},
		// A county-level city Hainan administers directly is its own
		// county: no district.
		{"Hainan", "Qionghai", "", 19.2425, 110.4617, "Qionghai", "琼海市", "0898", "", ""},
		// Without a province, the coordinates give it.
		{"", "Shenzhen Bay Park", "", 22.4994, 113.952, "Shenzhen", "深圳市", "0755", "Shenzhen Bay Park", "南山区"},
		// Coordinates far outside China resolve nothing.
		{"Henan", "Guancheng", "", 48.85, 2.35, "Guancheng", "Guancheng", "", "", ""},
	}
	for _, tt := range tests {
		if got := City("CN", tt.province, tt.city, tt.lat, tt.lon, en); got != tt.enCity {
			t.Errorf("City(%q, %q, en) = %q, want %q", tt.province, tt.city, got, tt.enCity)
		}
		if got := City("CN", tt.province, tt.city, tt.lat, tt.lon, zh); got != tt.zhCity {
			t.Errorf("City(%q, %q, zh) = %q, want %q", tt.province, tt.city, got, tt.zhCity)
		}
		wantArea := tt.area
		if wantArea == "" {
			wantArea = "86"
		}
		if got := AreaCode("CN", tt.province, tt.city, tt.lat, tt.lon); got != wantArea {
			t.Errorf("AreaCode(%q, %q) = %q, want %q", tt.province, tt.city, got, wantArea)
		}
		if got := District("CN", tt.province, tt.city, tt.district, tt.lat, tt.lon, en); got != tt.enDistrict {
			t.Errorf("District(%q, %q, %q, en) = %q, want %q", tt.province, tt.city, tt.district, got, tt.enDistrict)
		}
		got := District("CN", tt.province, tt.city, tt.district, tt.lat, tt.lon, zh)
		if tt.zhDistrict == "*" && isCountyOf(got, tt.zhCity) {
			continue
		}
		if got != tt.zhDistrict {
			t.Errorf("District(%q, %q, %q, zh) = %q, want %q", tt.province, tt.city, tt.district, got, tt.zhDistrict)
		}
	}
}

// TestChinaDistrictByName: in Chinese, the district is the county of the
// city whose pinyin the data's district name, else its town's name,
// spells, where the county containing the coordinates is another (the
// polygons are simplified and the coordinates approximate); in English
// the data's spelling.
func TestChinaDistrictByName(t *testing.T) {
	tests := []struct {
		province, city, district string
		lat, lon                 float64
		contained, zh, en        string
	}{
		{"Henan", "Guancheng", "", 34.7657, 113.753, "金水区", "管城回族区", "Guancheng"},
		// The district in brackets wins over the town's name.
		{"Henan", "Guancheng", "Jinshui Qu", 34.7657, 113.753, "金水区", "金水区", "Jinshui"},
		{"Henan", "Zhengzhou", "Guancheng Qu", 34.7657, 113.753, "金水区", "管城回族区", "Guancheng"},
		// Beside a district, the town's name is no guide: Lianyun spells
		// 连云区, but Baitabu is a town of 东海县, which contains it.
		{"Jiangsu", "Lianyun", "Baitabuzhen", 34.5650, 118.8820, "东海县", "东海县", "Baitabuzhen"},
		// The kind written together with the name: Peixian is 沛县.
		{"Jiangsu", "Xuzhou", "Peixian", 34.3, 117.2, "鼓楼区", "沛县", "Peixian"},
		// Case and hyphens fold away (TestFoldPinyin).
		{"Henan", "Zhengzhou", "GUAN-CHENG Qu", 34.7657, 113.753, "金水区", "管城回族区", "GUAN-CHENG"},
	}
	for _, tt := range tests {
		r := chinaResolve(tt.province, tt.city, tt.lat, tt.lon)
		if got := cnContainingCounty(tt.province, r, tt.lat, tt.lon); got != tt.contained {
			t.Errorf("%s/%s: containing county %q, want %q", tt.city, tt.district, got, tt.contained)
		}
		if got := District("CN", tt.province, tt.city, tt.district, tt.lat, tt.lon, zh); got != tt.zh {
			t.Errorf("District(%q, %q, %q, zh) = %q, want %q", tt.province, tt.city, tt.district, got, tt.zh)
		}
		if got := District("CN", tt.province, tt.city, tt.district, tt.lat, tt.lon, en); got != tt.en {
			t.Errorf("District(%q, %q, %q, en) = %q, want %q", tt.province, tt.city, tt.district, got, tt.en)
		}
	}
}

func TestFoldPinyin(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"Guancheng", "guancheng", true},
		{"Yun'an", "yunan", true},
		{"Lüliang", "luliang", true},
		{"Lvliang", "luliang", true},
		{"Xi-An", "xian", true},
		{"São Paulo", "s", false},
		{"Zhangjiakou (Qiaoxi)", "zhangjiakou", false},
		{strings.Repeat("a", 65), strings.Repeat("a", 64), false},
	} {
		var buf [64]byte
		got, ok := foldPinyin(buf[:0], tt.in)
		if string(got) != tt.want || ok != tt.ok {
			t.Errorf("foldPinyin(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// isCountyOf: name is a county of the unit named city.
func isCountyOf(name, city string) bool {
	for _, c := range cnCounties {
		if c.chinese == name && cnUnits[c.unit].chinese == city {
			return true
		}
	}
	return false
}

// TestChinaRegions checks the boundary tables as a whole: every county
// belongs to a unit, every unit has a Chinese name of a prefecture-level
// form (or a county a province administers directly) and an area code,
// and the polygons decode and cover the seat of every province.
func TestChinaRegions(t *testing.T) {
	for i, u := range cnUnits {
		if !allHan(u.chinese) || u.areaCode == "" || !isASCII(u.english) {
			t.Errorf("unit %d %+v: no Chinese name, area code or ASCII English name", i, u)
		}
		if int(u.province) >= len(cnProvinces) {
			t.Errorf("unit %d %s: province %d", i, u.chinese, u.province)
		}
	}
	for i, c := range cnCounties {
		if int(c.unit) >= len(cnUnits) || c.chinese != "" && !allHan(c.chinese) {
			t.Errorf("county %d %+v", i, c)
		}
	}
	idx := cnRegions()
	if len(idx.polygons) < 2800 {
		t.Fatalf("only %d polygons decoded", len(idx.polygons))
	}
	seats := map[string][2]float64{ // provincial capitals
		"北京市": {39.9042, 116.4074}, "广州市": {23.1291, 113.2644}, "拉萨市": {29.65, 91.1},
		"海口市": {20.044, 110.199}, "哈尔滨市": {45.75, 126.65}, "乌鲁木齐市": {43.8256, 87.6168},
	}
	for want, c := range seats {
		i, ok := cnCountyAt(c[0], c[1], -1, cnNearLimit)
		if !ok || cnUnits[cnCounties[i].unit].chinese != want {
			t.Errorf("cnCountyAt(%v) = %d %v, want a county of %s", c, i, ok, want)
		}
	}
	if _, ok := decodeRegions(cnRegionsData[:len(cnRegionsData)/2]); ok {
		t.Error("a truncated china_regions.bin decodes")
	}
}

// TestChinaRegionsMemory measures what indexing the boundaries costs the
// heap (what their first use adds to the process), and holds it to a
// budget: the rings stay in the embedded file.
func TestChinaRegionsMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	idx, ok := decodeRegions(cnRegionsData)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if !ok {
		t.Fatal("china_regions.bin does not decode")
	}
	points := 0 // a closed ring has as many edges as points
	for i := range idx.polygons {
		idx.edges(&idx.polygons[i], true, func(_, _, _, _ float64) { points++ })
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(idx)
	t.Logf("%d polygons, %d points, %d cells: the heap grows by %.2f MB (the embedded file is %.2f MB)",
		len(idx.polygons), points, len(idx.cells), float64(grew)/(1<<20), float64(len(cnRegionsData))/(1<<20))
	if grew > 1<<20 {
		t.Errorf("the boundaries take %.1f MB of heap, over the 1 MB budget", float64(grew)/(1<<20))
	}
}

func TestWholeName(t *testing.T) {
	for _, tt := range []struct {
		country, name string
		want          bool
	}{
		{"DE", "Frankfurt (Oder)", true},
		{"de", "Halle (Saale)", true},
		{"DE", "Kempten (Allgäu)", true},
		{"DE", "Kempten (Allgaeu)", true}, // the ASCII name
		{"PL", "Frankfurt (Oder)", false},
		{"KR", "Seoul (Toegye-ro)", false},
		{"DE", "Frankfurt", false},
		{"", "Frankfurt (Oder)", false},
	} {
		if got := WholeName(tt.country, tt.name); got != tt.want {
			t.Errorf("WholeName(%q, %q) = %v, want %v", tt.country, tt.name, got, tt.want)
		}
	}
}

// TestBracketNames: WholeName's binary search needs the table sorted and
// well formed, and finds every line of it, the first and the last
// included.
func TestBracketNames(t *testing.T) {
	if len(bracketNames) < 1000 {
		t.Fatalf("%d names", len(bracketNames))
	}
	for i, l := range bracketNames {
		cc, name, ok := strings.Cut(l, "\t")
		if !ok || len(cc) != 2 || !strings.HasSuffix(name, ")") {
			t.Errorf("name %d: %q", i, l)
			continue
		}
		if i > 0 && bracketNames[i-1] >= l {
			t.Errorf("names %d and %d out of order: %q %q", i-1, i, bracketNames[i-1], l)
		}
		if !WholeName(cc, name) {
			t.Errorf("name %d, %q, is not found", i, l)
		}
	}
}

// TestChinaProvinces checks that each of mainland China's 31 province-level
// divisions, as DB-IP spells it, has its official Chinese name.
func TestChinaProvinces(t *testing.T) {
	want := map[string]string{
		"Beijing": "北京市", "Tianjin": "天津市", "Hebei": "河北省", "Shanxi": "山西省",
		"Inner Mongolia": "内蒙古自治区", "Liaoning": "辽宁省", "Jilin": "吉林省",
		"Heilongjiang": "黑龙江省", "Shanghai": "上海市", "Jiangsu": "江苏省", "Zhejiang": "浙江省",
		"Anhui": "安徽省", "Fujian": "福建省", "Jiangxi": "江西省", "Shandong": "山东省",
		"Henan": "河南省", "Hubei": "湖北省", "Hunan": "湖南省", "Guangdong": "广东省",
		"Guangxi": "广西壮族自治区", "Hainan": "海南省", "Chongqing": "重庆市", "Sichuan": "四川省",
		"Guizhou": "贵州省", "Yunnan": "云南省", "Tibet": "西藏自治区", "Shaanxi": "陕西省",
		"Gansu": "甘肃省", "Qinghai": "青海省", "Ningxia": "宁夏回族自治区", "Xinjiang": "新疆维吾尔自治区",
	}
	if len(want) != 31 || len(cnProvinces) != 31 {
		t.Fatalf("%d provinces in the test, %d in the table, want 31", len(want), len(cnProvinces))
	}
	for e, c := range want {
		if got := Province("CN", e, zh); got != c {
			t.Errorf("Province(CN, %q, zh) = %q, want %q", e, got, c)
		}
		if got := Province("CN", e, en); got != e {
			t.Errorf("Province(CN, %q, en) = %q", e, got)
		}
	}
}

var areaCodeRE = regexp.MustCompile(`^0(10|2[0-9]|[3-9][0-9]{2})$`)

// TestChinaTables checks every generated entry against the rules of the
// record and against libphonenumber's own validation of the area code.
func TestChinaTables(t *testing.T) {
	byDivision := map[string]bool{}
	perProvince := map[uint8]int{}
	if len(cnPrefectures) < 330 {
		t.Errorf("only %d prefecture-level divisions", len(cnPrefectures))
	}
	for _, p := range cnPrefectures {
		prov := cnProvinces[p.province]
		perProvince[p.province]++
		if byDivision[p.division] {
			t.Errorf("division %s twice", p.division)
		}
		byDivision[p.division] = true
		if !strings.HasPrefix(p.division, prov.division) || len(p.division) != 4 {
			t.Errorf("%s %s: division code %s is not in province %s", p.english, p.chinese, p.division, prov.division)
		}
		if !isASCII(p.english) || p.english == "" {
			t.Errorf("%s: English name %q is not ASCII", p.chinese, p.english)
		}
		if !allHan(p.chinese) {
			t.Errorf("%s: Chinese name %q is not Chinese", p.english, p.chinese)
		}
		if !areaCodeRE.MatchString(p.areaCode) {
			t.Errorf("%s %s: area code %q", p.english, p.chinese, p.areaCode)
		}
		// Through the public API, by the canonical English name.
		if got := City("CN", prov.english, p.english, nan, nan, zh); got != p.chinese {
			t.Errorf("City(CN, %q, %q, zh) = %q, want %q", prov.english, p.english, got, p.chinese)
		}
		if got := AreaCode("CN", prov.english, p.english, nan, nan); got != p.areaCode {
			t.Errorf("AreaCode(CN, %q, %q, nan, nan) = %q, want %q", prov.english, p.english, got, p.areaCode)
		}
	}
	for i, p := range cnProvinces {
		if p.municipality {
			byDivision[p.division] = true // the municipality is its own city
		}
		if !hasHan(p.chinese) || hasHan(p.english) || !isASCII(p.english) {
			t.Errorf("province %q %q", p.english, p.chinese)
		}
		if p.municipality != (perProvince[uint8(i)] == 0) {
			t.Errorf("%s: municipality %v with %d prefecture-level divisions", p.english, p.municipality, perProvince[uint8(i)])
		}
		if p.municipality && !areaCodeRE.MatchString(p.areaCode) {
			t.Errorf("municipality %s: area code %q", p.english, p.areaCode)
		}
	}
	for name, i := range cnProvinceIndex {
		if hasHan(name) || int(i) >= len(cnProvinces) {
			t.Errorf("province index %q -> %d", name, i)
		}
	}
	valid := map[string]bool{}
	for _, places := range cnPlaces {
		for name, pl := range places {
			// ASCII, but for the typographic apostrophe DB-IP writes
			// (Guang’an) and libphonenumber's ü (Lüliang).
			if name == "" || !isASCII(strings.NewReplacer("’", "'", "ü", "u").Replace(name)) {
				t.Errorf("city name %q is empty or not ASCII", name)
			}
			if pl.chinese != "" && !allHan(pl.chinese) {
				t.Errorf("%q: Chinese name %q is not Chinese", name, pl.chinese)
			}
			if pl.division != "" && !byDivision[pl.division] {
				t.Errorf("%q: division %q is neither a prefecture nor a municipality", name, pl.division)
			}
			if !areaCodeRE.MatchString(pl.areaCode) {
				t.Errorf("%q %q: area code %q", name, pl.chinese, pl.areaCode)
				continue
			}
			valid[pl.areaCode] = true
		}
	}
	// Each code is one libphonenumber accepts for a Chinese fixed line.
	for code := range valid {
		ok := false
		for _, sub := range []string{"62345678", "6234567", "22345678", "2234567", "52345678", "5234567", "82345678", "8234567"} {
			n, err := phonenumbers.Parse("+86"+code[1:]+sub, "")
			if err == nil && phonenumbers.IsValidNumber(n) && phonenumbers.GetLengthOfGeographicalAreaCode(n) == len(code)-1 {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("area code %s is not a valid Chinese area code for libphonenumber", code)
		}
	}
}

// TestNotChina: other countries' places keep their English names in
// English, get their province's and city's Chinese names from the world
// tables (never China's), and get the country calling code.
func TestNotChina(t *testing.T) {
	for _, tt := range []struct{ country, province, zhProvince, city, area string }{
		{"US", "California", "加利福尼亚州", "Mountain View", "1"},
		{"GB", "England", "英格兰", "London", "44"},
		{"JP", "Tokyo", "东京都", "Tokyo", "81"},
		{"TW", "Taipei City", "台北市", "Taipei", "886"},
		{"HK", "Central and Western District", "中西区", "Hong Kong", "852"},
		{"MO", "", "", "Macau", "853"},
		{"US", "Beijing", "Beijing", "Beijing", "1"}, // a Chinese name in another country is not China's
	} {
		for _, l := range []ipatlas.Lang{en, zh} {
			want := tt.province
			if l == zh {
				want = tt.zhProvince
			}
			if got := Province(tt.country, tt.province, l); got != want {
				t.Errorf("Province(%q, %q, %v) = %q, want %q", tt.country, tt.province, l, got, want)
			}
			// In Chinese, the world table's name if it has one, never
			// China's.
			wantCity := tt.city
			if zhName, ok := lookupCity(tt.country, tt.city, nan, nan); ok && l == zh {
				wantCity = zhName
			}
			if got := City(tt.country, tt.province, tt.city, nan, nan, l); got != wantCity {
				t.Errorf("City(%q, %q, %q, %v) = %q, want %q", tt.country, tt.province, tt.city, l, got, wantCity)
			}
		}
		if got := AreaCode(tt.country, tt.province, tt.city, nan, nan); got != tt.area {
			t.Errorf("AreaCode(%q, %q, %q, nan, nan) = %q, want %q", tt.country, tt.province, tt.city, got, tt.area)
		}
	}
}

func TestTimeZones(t *testing.T) {
	if got := TimeZones("JP"); len(got) != 1 || got[0] != "Asia/Tokyo" {
		t.Errorf("TimeZones(JP) = %v", got)
	}
	if got := OnlyZone("jp"); got != "Asia/Tokyo" {
		t.Errorf("OnlyZone(jp) = %q", got)
	}
	cn := TimeZones("CN")
	if len(cn) < 1 || cn[0] != "Asia/Shanghai" {
		t.Errorf("TimeZones(CN) = %v, want Asia/Shanghai first", cn)
	}
	if us := TimeZones("US"); len(us) < 10 || OnlyZone("US") != "" {
		t.Errorf("TimeZones(US) = %v, OnlyZone %q", us, OnlyZone("US"))
	}
	if OnlyZone("ZZ") != "" || OnlyZone("") != "" {
		t.Error("OnlyZone of an unknown country is not empty")
	}
	n := 0
	for cc, zs := range zonesByCountry {
		for _, z := range zs {
			n++
			if _, err := time.LoadLocation(z); err != nil {
				t.Errorf("%s: zone %q does not load: %v", cc, z, err)
			}
		}
		if Country(cc, en) == "" {
			t.Errorf("zone country %s has no name", cc)
		}
	}
	if n < 300 {
		t.Errorf("only %d zones", n)
	}
	t.Logf("%d countries with %d zones, tz database %s", len(zonesByCountry), n, tzVersion)
}

// TestNoAllocations guards the hot path's promise: lookups allocate nothing.
func TestNoAllocations(t *testing.T) {
	calls := map[string]func(){
		"Country":        func() { _ = Country("US", zh) },
		"Country lower":  func() { _ = Country("us", en) },
		"ContinentCode":  func() { _ = ContinentCode("CN") },
		"Continent":      func() { _ = Continent("AS", zh) },
		"Currency":       func() { _ = Currency("GB") },
		"Province":       func() { _ = Province("CN", "Guangdong", zh) },
		"City":           func() { _ = City("CN", "Guangdong", "Shenzhen", nan, nan, zh) },
		"City decor":     func() { _ = City("CN", "Shaanxi", "Xianyangshi (Yanta Qu)", nan, nan, zh) },
		"City unknown":   func() { _ = City("CN", "Fujian", "Wenquan (Somewhere)", nan, nan, zh) },
		"AreaCode":       func() { _ = AreaCode("CN", "Guangdong", "Shenzhen", nan, nan) },
		"AreaCode US":    func() { _ = AreaCode("US", "California", "Mountain View", nan, nan) },
		"TimeZones":      func() { _ = TimeZones("jp") },
		"Province US":    func() { _ = Province("US", "California", zh) },
		"Province BR":    func() { _ = Province("br", "São Paulo", zh) },
		"Province strip": func() { _ = Province("KR", "Gyeonggi-do", zh) },
		"Province miss":  func() { _ = Province("FR", "Nowhere Région", zh) },
		"worldProvince":  func() { _ = worldProvince("VN", "Nghệ An Province") },
		"City town":      func() { _ = City("CN", "Henan", "Guancheng", 34.7657, 113.753, zh) },
		"City town en":   func() { _ = City("CN", "Henan", "Guancheng", 34.7657, 113.753, en) },
		"City offshore":  func() { _ = City("CN", "Guangdong", "Somewhere", 21.0, 114.5, zh) },
		"AreaCode town":  func() { _ = AreaCode("CN", "Henan", "Guancheng", 34.7657, 113.753) },
		"District":       func() { _ = District("CN", "Guangdong", "Wushipai", "Nanshan Qu", 22.5138, 113.908, zh) },
		"District town":  func() { _ = District("CN", "Henan", "Guancheng", "", 34.7657, 113.753, zh) },
		"WholeName":      func() { _ = WholeName("de", "Frankfurt (Oder)") },
		"District US":    func() { _ = District("US", "Virginia", "Ashburn", "Loudoun County", 39.04, -77.49, zh) },
		"City world":     func() { _ = City("US", "California", "Mountain View", 37.422, -122.085, zh) },
		"City world decor": func() {
			_ = City("RU", "Moscow", "Moscow (Tsentralnyy administrativnyy okrug)", 55.7558, 37.6173, zh)
		},
		"City world unknown": func() { _ = City("US", "Virginia", "Ashburn", 39.0438, -77.4874, zh) },
		"District homophone": func() { _ = District("CN", "Guangdong", "Yunan", "", 23.07, 112.0, zh) },
		"District unnamed":   func() { _ = District("CN", "Shanxi", "Liuxiang", "", 37.8734, 112.563, zh) },
	}
	for name, f := range calls {
		f() // builds the lazy tables
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

// FuzzLookups: no input panics, and English output never gains Chinese
// characters the input did not have.
func FuzzLookups(f *testing.F) {
	f.Add("CN", "Guangdong", "Shenzhen")
	f.Add("cn", "Beijing", "Jinrongjie (Xicheng District)")
	f.Add("CN", "Shaanxi", " ()")
	f.Add("CN", "Shaanxi", "shi")
	f.Add("US", "", "")
	f.Fuzz(func(t *testing.T, country, province, city string) {
		for _, l := range []ipatlas.Lang{en, zh} {
			_ = Continent(ContinentCode(country), l)
			_ = Country(country, l)
			_ = Province(country, province, l)
			_ = City(country, province, city, nan, nan, l)
		}
		_ = Currency(country)
		_ = AreaCode(country, province, city, nan, nan)
		_ = TimeZones(country)
		if !hasHan(province) && hasHan(Province(country, province, en)) {
			t.Errorf("English province of %q has Chinese characters", province)
		}
		if !hasHan(city) && hasHan(City(country, province, city, nan, nan, en)) {
			t.Errorf("English city of %q has Chinese characters", city)
		}
		if hasHan(Country(country, en)) || hasHan(Continent(ContinentCode(country), en)) {
			t.Errorf("English country or continent of %q has Chinese characters", country)
		}
	})
}

// TestInEU: the 27 member states, each a named country of Europe's
// continent, and none of the countries that left or never joined; codes
// are upper case, as the data's are.
func TestInEU(t *testing.T) {
	var members []string
	for _, code := range isoCountries {
		if InEU(code) {
			members = append(members, code)
			if ContinentCode(code) != "EU" || Country(code, en) == "" {
				t.Errorf("%s: continent %q, name %q", code, ContinentCode(code), Country(code, en))
			}
		}
	}
	if len(members) != 27 {
		t.Errorf("%d members: %v", len(members), members)
	}
	for _, code := range []string{"GB", "CH", "NO", "IS", "TR", "UA", "EU", "de", ""} {
		if InEU(code) {
			t.Errorf("%q is a member", code)
		}
	}
	for _, code := range []string{"DE", "FR", "CY", "BG", "HR", "IE"} {
		if !InEU(code) {
			t.Errorf("%s is not a member", code)
		}
	}
}
