package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hand-maintained tables. Everything else is derived from the two sources by
// the rules in this file; these are the few facts neither source gives.
// buildChina takes them as a handTables value so that its rules can be
// tested on small inputs.

type exonym struct{ province, name, phone string }

type handTables struct {
	renamed           map[string]string
	englishOfDivision map[string]string
	areaCodeOverrides map[string]string
	exonyms           []exonym
	provinceAliases   map[string][]string
}

var hand = handTables{
	renamed:           renamedCities,
	englishOfDivision: englishOfDivision,
	areaCodeOverrides: areaCodeOverrides,
	exonyms:           cityExonyms,
	provinceAliases:   provinceAliases,
}

// renamedCities maps prefecture names in libphonenumber's Chinese data that
// were renamed since, and that the stem rule (铜仁地区 -> 铜仁市) cannot match,
// to the official name. 襄樊市 became 襄阳市 in 2010 (State Council
// approval of 2010-11-26).
var renamedCities = map[string]string{
	"襄樊市": "襄阳市",
}

// englishOfDivision names the official prefecture-level divisions that
// libphonenumber never names, because it geocodes all of Hainan's numbers
// as Haikou. Keyed by GB/T 2260 code; the names are the Hanyu Pinyin the
// GeoNames-based IP data (DB-IP) uses.
var englishOfDivision = map[string]string{
	"4602": "Sanya",
	"4603": "Sansha",
	"4604": "Danzhou",
}

// areaCodeOverrides give the area code of a prefecture-level division, by
// GB/T 2260 code, that neither source gives correctly: libphonenumber names
// no fixed-line entry for it and the official table's code is one
// libphonenumber's metadata rejects as an area code. Bozhou (亳州) was split
// from Fuyang prefecture and shares its 0558, a code libphonenumber accepts;
// the table's 0567 is one it rejects.
var areaCodeOverrides = map[string]string{
	"3416": "0558",
}

// cityExonyms are English names that GeoNames, and so the IP data built on
// it (DB-IP Lite, MaxMind), uses for a prefecture-level city or its seat
// where libphonenumber spells it differently: an older romanization
// (Urumchi), a Mongol, Uyghur or Tibetan exonym (Hulunbuir, Korla, Chamdo),
// or Wade-Giles (Liuchow). Each maps to the libphonenumber name of the same
// place in the same province. Urumqi, Kashgar, Hulunbuir, Xilinhot,
// Bayan Nur, Chamdo, Lhoka, Shangri-La, Pu'er, Liuchow and Barkam were found
// by measuring the real DB-IP data against the generated tables (see
// TestDBIPCoverage in package names); the others are the same places'
// GeoNames names.
var cityExonyms = []exonym{
	{"Xinjiang", "Urumqi", "Urumchi"},
	{"Xinjiang", "Kashgar", "Kashi"},
	{"Xinjiang", "Korla", "KuErle"},
	{"Inner Mongolia", "Hulunbuir", "Hulun"},
	{"Inner Mongolia", "Hailar", "Hailaer"},
	{"Inner Mongolia", "Xilinhot", "Xilinhaote"},
	{"Inner Mongolia", "Bayan Nur", "Bayannur"},
	{"Inner Mongolia", "Ulanhot", "Wulanhaote"},
	{"Tibet", "Chamdo", "Qamdo"},
	{"Tibet", "Lhoka", "Shannan"},
	{"Tibet", "Shigatse", "Xigaze"},
	{"Yunnan", "Shangri-La", "Zhongdian"},
	{"Yunnan", "Pu'er", "Puer"},
	{"Qinghai", "Golmud", "GeErmu"},
	{"Guangxi", "Liuchow", "Liuzhou"},
	{"Sichuan", "Barkam", "MaErkang"},
}

// provinceAliases are the English forms of the autonomous regions' names
// in ISO 3166-2:CN (Nei Mongol, Xizang, ... Zizhiqu) and GeoNames (... Hui
// Autonomous Region) that differ from libphonenumber's and DB-IP's
// (Inner Mongolia, Tibet, Guangxi, Ningxia, Xinjiang); the plain suffixed
// forms ("Guangdong Sheng", "Beijing Shi", "Tibet Autonomous Region") are
// derived by rule in provinceVariants.
var provinceAliases = map[string][]string{
	"Inner Mongolia": {"Nei Mongol", "Nei Mongol Zizhiqu", "Nei Mongol Autonomous Region"},
	"Tibet":          {"Xizang", "Xizang Zizhiqu", "Xizang Autonomous Region"},
	"Guangxi":        {"Guangxi Zhuang Autonomous Region", "Guangxi Zhuangzu Zizhiqu"},
	"Ningxia":        {"Ningxia Hui Autonomous Region", "Ningxia Huizu Zizhiqu"},
	"Xinjiang":       {"Xinjiang Uygur Autonomous Region", "Xinjiang Uyghur Autonomous Region", "Xinjiang Uygur Zizhiqu", "Xinjiang Uighur Autonomous Region"},
}

type province struct {
	code, zh, en string
	municipality bool
	self         *city   // the municipality as its own city
	cities       []*city // official prefecture-level divisions
	areaCode     string  // the code every city of the province shares, if one
}

type city struct {
	prov     *province
	code     string // GB/T 2260; "" for places only libphonenumber names
	zh, en   string
	areaCode string
	official bool
}

type key struct {
	prov *province
	en   string
}

// entry is what one English (province, city) name resolves to.
type entry struct {
	city     *city  // nil for names libphonenumber gives only in a list
	zh       string // "" when there is no Chinese name
	areaCode string
}

type china struct {
	provinces  []*province
	provByEn   map[string]*province
	provAlias  map[string]*province
	extras     map[string]*city // "code|zh" -> place only libphonenumber names
	votes      map[key]map[*city]int
	entries    map[key]*entry
	log        io.Writer
	hand       handTables
	conflicts  []string
	dvCodes    map[string][]string
	provCodes  map[*province]map[string]bool
	keyCodes   map[key][]cand
	cityCodes  map[*city][]cand
	phoneNames map[*city][]string // libphonenumber's Chinese names of a city
}

// A parsedDesc is a libphonenumber description split into its province
// and its English and Chinese place names.
type parsedDesc struct {
	p      *province
	en     []string
	zh     []string // empty for a municipality
	n      int      // number blocks that carry it
	code   string   // area code, for a fixed-line entry
	single bool     // names one place
}

type cand struct {
	code  string
	width int // how many places the entry names; 1 is the most specific
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func allHan(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// commonPrefix is the longest common prefix of a and b in whole runes.
func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) {
		ra, na := utf8.DecodeRuneInString(a[i:])
		rb, _ := utf8.DecodeRuneInString(b[i:])
		if ra != rb {
			break
		}
		i += na
	}
	return a[:i]
}

func firstRunes(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i]
}

// buildChina joins the two sources by these rules:
//
//  1. The official list gives the 31 province-level divisions and the
//     prefecture-level ones, with their Chinese names and GB/T 2260 codes.
//  2. Each libphonenumber description gives a province's English name (the
//     part after the comma) and, by the first two characters of its Chinese
//     text, the official province; the Chinese city names follow the
//     province's name or short form, joined by 、.
//  3. A Chinese city name is an official one, a renamed one, or one with the
//     same stem (铜仁地区 is now 铜仁市); any other (巢湖市, 仙桃市: county-
//     level now) stays a place of its own under libphonenumber's name.
//  4. An English name goes to the city most of the number blocks carrying
//     it name; a name inside a list pairs with a Chinese name of the list
//     only when both are the last unpaired ones.
//  5. Area codes: see assignAreaCodes. A seat town with its own code keeps it.
//  6. Spelling variants (englishVariants), exonyms, and province name forms
//     (provinceVariants, provinceAliases) lead to the same entries.
func buildChina(dv *divisions, fixed []areaEntry, mobile map[phoneDesc]int, hand handTables, log io.Writer) (*china, error) {
	c := &china{
		provByEn:   map[string]*province{},
		provAlias:  map[string]*province{},
		extras:     map[string]*city{},
		votes:      map[key]map[*city]int{},
		entries:    map[key]*entry{},
		log:        log,
		hand:       hand,
		dvCodes:    dv.areaCodes,
		provCodes:  map[*province]map[string]bool{},
		keyCodes:   map[key][]cand{},
		cityCodes:  map[*city][]cand{},
		phoneNames: map[*city][]string{},
	}
	prefixes := map[string]*province{}
	for _, d := range dv.provinces {
		p := &province{code: d.code, zh: d.name, municipality: strings.HasSuffix(d.name, "市")}
		// Province-level names are told apart by their first two characters
		// (山东/山西, 河北/河南, 湖北/湖南, 广东/广西, 内蒙/...).
		pre := firstRunes(d.name, 2)
		if prefixes[pre] != nil {
			return nil, fmt.Errorf("provinces %s and %s share the prefix %s", prefixes[pre].zh, d.name, pre)
		}
		prefixes[pre] = p
		if p.municipality {
			p.self = &city{prov: p, code: d.code, zh: d.name, official: true}
		}
		for _, cd := range dv.cities[d.code] {
			p.cities = append(p.cities, &city{prov: p, code: cd.code, zh: cd.name, official: true})
		}
		if !p.municipality && len(p.cities) == 0 {
			return nil, fmt.Errorf("province %s has no prefecture-level divisions", d.name)
		}
		c.provinces = append(c.provinces, p)
	}

	// splitZh finds the province of a Chinese description and the Chinese
	// city names after it: libphonenumber writes the province as the
	// official name (广东省) or its short form (广西 for 广西壮族自治区), so the
	// province part is the common prefix with the official name.
	splitZh := func(desc string) (*province, []string, error) {
		p := prefixes[firstRunes(desc, 2)]
		if p == nil {
			return nil, nil, fmt.Errorf("no province for %q", desc)
		}
		rest := desc[len(commonPrefix(desc, p.zh)):]
		if rest == "" {
			return p, nil, nil
		}
		return p, strings.Split(rest, "、"), nil
	}
	notePhoneProvince := func(en string, p *province) error {
		if q := c.provByEn[en]; q != nil && q != p {
			return fmt.Errorf("the English province %q is both %s and %s", en, q.zh, p.zh)
		}
		if p.en != "" && p.en != en {
			return fmt.Errorf("province %s is both %q and %q", p.zh, p.en, en)
		}
		c.provByEn[en] = p
		p.en = en
		return nil
	}

	var descs []parsedDesc
	add := func(d phoneDesc, n int, code string) error {
		ens, enProv := d.enCities()
		p, zhs, err := splitZh(d.zh)
		if err != nil {
			return err
		}
		if err := notePhoneProvince(enProv, p); err != nil {
			return err
		}
		if (len(zhs) == 0) != p.municipality {
			return fmt.Errorf("%q / %q: a municipality is named alone, a province with its city", d.en, d.zh)
		}
		descs = append(descs, parsedDesc{p: p, en: ens, zh: zhs, n: n, code: code, single: len(ens) == 1 && len(zhs) <= 1})
		return nil
	}
	for _, a := range fixed {
		if err := add(a.desc, 1, a.code); err != nil {
			return nil, err
		}
	}
	mk := make([]phoneDesc, 0, len(mobile))
	for d := range mobile {
		mk = append(mk, d)
	}
	sort.Slice(mk, func(i, j int) bool { return mk[i].en < mk[j].en || mk[i].en == mk[j].en && mk[i].zh < mk[j].zh })
	for _, d := range mk {
		if err := add(d, mobile[d], ""); err != nil {
			return nil, err
		}
	}
	for _, p := range c.provinces {
		if p.en == "" {
			return nil, fmt.Errorf("libphonenumber names no place in %s", p.zh)
		}
		if p.self != nil {
			p.self.en = p.en
		}
	}

	// Votes: each single-place description pairs an English and a Chinese
	// name, weighted by how many number blocks carry it.
	vote := func(p *province, en string, ct *city, n int) {
		k := key{p, en}
		if c.votes[k] == nil {
			c.votes[k] = map[*city]int{}
		}
		c.votes[k][ct] += n
	}
	for _, d := range descs {
		if !d.single {
			continue
		}
		ct := c.resolve(d.p, d.zh, true)
		vote(d.p, d.en[0], ct, d.n)
	}
	// A list ("Shunde/Foshan" / "佛山市、顺德市") is in no reliable order;
	// once the names already paired elsewhere are taken out, a single
	// English name left with a single Chinese name are the same place.
	for _, d := range descs {
		if d.single {
			continue
		}
		var zs []*city
		for _, z := range d.zh {
			zs = append(zs, c.resolve(d.p, []string{z}, true))
		}
		var left []string
		for _, t := range d.en {
			m := c.majority(key{d.p, t})
			taken := false
			for i, z := range zs {
				if z == m {
					zs = append(zs[:i], zs[i+1:]...)
					taken = true
					break
				}
			}
			if !taken {
				left = append(left, t)
			}
		}
		if len(left) == 1 && len(zs) == 1 {
			vote(d.p, left[0], zs[0], 1)
		}
	}

	// Entries: every English name to the city most of its blocks name.
	for k := range c.votes {
		m := c.majority(k)
		c.entries[k] = &entry{city: m, zh: m.zh}
	}
	// Canonical English name of a city: its most used English name, folded
	// to ASCII (Lüliang -> Luliang) because English output is plain ASCII
	// pinyin in the IP data.
	best := map[*city]int{}
	for _, k := range sortedKeys(c.entries) {
		e := c.entries[k]
		n := c.votes[k][e.city]
		if n > best[e.city] || n == best[e.city] && k.en < e.city.en {
			best[e.city] = n
			e.city.en = k.en
		}
	}
	for _, p := range c.provinces {
		for _, ct := range p.cities {
			if en, ok := c.hand.englishOfDivision[ct.code]; ok {
				if ct.en != "" {
					return nil, fmt.Errorf("englishOfDivision[%s] is stale: libphonenumber names %s %q", ct.code, ct.zh, ct.en)
				}
				ct.en = en
				c.entries[key{p, en}] = &entry{city: ct, zh: ct.zh}
			}
			if ct.en == "" {
				return nil, fmt.Errorf("no English name for %s %s (%s): add it to englishOfDivision", p.zh, ct.zh, ct.code)
			}
		}
	}
	for _, ct := range c.allCities() {
		if folded := foldASCII(ct.en); folded != ct.en {
			ct.en = folded
		}
	}

	if err := c.assignAreaCodes(descs); err != nil {
		return nil, err
	}
	for _, d := range descs {
		if d.code == "" {
			continue
		}
		for _, t := range d.en {
			c.keyCodes[key{d.p, t}] = append(c.keyCodes[key{d.p, t}], cand{d.code, len(d.en)})
		}
	}
	for k, e := range c.entries {
		e.areaCode = e.city.areaCode
		// A seat town with its own code (Kuitun 0992 in Ili, 0999).
		if cs := c.keyCodes[k]; len(cs) > 0 && k.en != e.city.en {
			if code := c.choose(cs, nil); code != "" {
				e.areaCode = code
			}
		}
	}
	// Names libphonenumber gives only inside a list it cannot pair (Rikaze,
	// Zhongba / 日喀则地区、仲巴县): the area code is known, the Chinese name
	// is not.
	for _, k := range sortedCandKeys(c.keyCodes) {
		if _, ok := c.entries[k]; !ok {
			c.entries[k] = &entry{areaCode: c.choose(c.keyCodes[k], nil)}
		}
	}

	// Spelling rules and exonyms, added only where the name is free.
	for _, k := range sortedKeys(c.entries) {
		e := c.entries[k]
		for _, v := range englishVariants(k.en) {
			if _, ok := c.entries[key{k.prov, v}]; !ok {
				c.entries[key{k.prov, v}] = e
			}
		}
	}
	for _, ct := range c.allCities() {
		if _, ok := c.entries[key{ct.prov, ct.en}]; !ok {
			c.entries[key{ct.prov, ct.en}] = &entry{city: ct, zh: ct.zh, areaCode: ct.areaCode}
		}
	}
	for _, x := range c.hand.exonyms {
		p := c.provByEn[x.province]
		if p == nil {
			return nil, fmt.Errorf("cityExonyms: no province %q", x.province)
		}
		e := c.entries[key{p, x.phone}]
		if e == nil {
			return nil, fmt.Errorf("cityExonyms: libphonenumber has no %q in %s", x.phone, x.province)
		}
		if x.name == x.phone {
			continue
		}
		if old, ok := c.entries[key{p, x.name}]; ok && old != e {
			return nil, fmt.Errorf("cityExonyms: %q in %s already names %s", x.name, x.province, old.zh)
		}
		c.entries[key{p, x.name}] = e
	}

	// What the record promises: English names without Chinese characters,
	// Chinese names of Chinese characters only, canonical names in ASCII.
	for _, k := range sortedKeys(c.entries) {
		e := c.entries[k]
		if hasHan(k.en) || e.zh != "" && !allHan(e.zh) {
			return nil, fmt.Errorf("%s %q -> %q: English with Chinese characters or Chinese with other ones", k.prov.en, k.en, e.zh)
		}
	}
	for _, ct := range c.allCities() {
		if !isASCII(ct.en) {
			return nil, fmt.Errorf("%s %s: English name %q is not ASCII", ct.prov.en, ct.zh, ct.en)
		}
	}

	// Province aliases.
	for _, p := range c.provinces {
		for _, v := range provinceVariants(p) {
			c.addProvinceAlias(v, p)
		}
	}
	for en, vs := range c.hand.provinceAliases {
		p := c.provByEn[en]
		if p == nil {
			return nil, fmt.Errorf("provinceAliases: no province %q", en)
		}
		for _, v := range vs {
			c.addProvinceAlias(v, p)
		}
	}
	return c, nil
}

func (c *china) addProvinceAlias(name string, p *province) {
	if _, ok := c.provByEn[name]; ok {
		return
	}
	c.provAlias[name] = p
}

// provinceVariants derives the suffixed English forms of a province's name
// from the kind of division its official Chinese name gives: 省 Sheng /
// Province, 市 Shi / Municipality, 自治区 Zizhiqu / Autonomous Region.
func provinceVariants(p *province) []string {
	switch {
	case strings.HasSuffix(p.zh, "自治区"):
		return []string{p.en + " Zizhiqu", p.en + " Autonomous Region"}
	case strings.HasSuffix(p.zh, "省"):
		return []string{p.en + " Sheng", p.en + " Province"}
	case strings.HasSuffix(p.zh, "市"):
		return []string{p.en + " Shi", p.en + " Municipality"}
	}
	return nil
}

// englishVariants derives the spellings of a libphonenumber English name
// that the IP data uses: libphonenumber marks a pinyin syllable break with
// an inner capital (XiAn, MaAnshan) where the usual spelling has an
// apostrophe (Xi'an, Ma'anshan; DB-IP also writes the typographic ’), and
// writes ü (Lüliang) where plain ASCII has u or v.
func englishVariants(en string) []string {
	var out []string
	if strings.ContainsRune(en, 'ü') {
		out = append(out, strings.ReplaceAll(en, "ü", "u"), strings.ReplaceAll(en, "ü", "v"))
	}
	var b1, b2 strings.Builder
	split := false
	for i, r := range en {
		if i > 0 && unicode.IsUpper(r) {
			prev, _ := utf8.DecodeLastRuneInString(en[:i])
			if unicode.IsLower(prev) {
				split = true
				b1.WriteByte('\'')
				b2.WriteRune('’')
				r = unicode.ToLower(r)
			}
		}
		b1.WriteRune(r)
		b2.WriteRune(r)
	}
	if split {
		out = append(out, b1.String(), b2.String())
	}
	return out
}

func foldASCII(s string) string {
	return strings.NewReplacer("ü", "u", "Ü", "U").Replace(s)
}

// resolve finds the city of a libphonenumber Chinese name in province p:
// the municipality itself, the official name, a renamed one, or the
// official name with the same stem (铜仁地区 is now 铜仁市). With extra set,
// a name that is no prefecture-level division (巢湖市, 仙桃市) becomes a
// place of its own.
func (c *china) resolve(p *province, zhs []string, extra bool) *city {
	if len(zhs) == 0 {
		return p.self
	}
	name := zhs[0]
	ct := c.official(p, name)
	if ct == nil {
		k := p.code + "|" + name
		ct = c.extras[k]
		if ct == nil && extra {
			ct = &city{prov: p, zh: name}
			c.extras[k] = ct
		}
	}
	if ct != nil {
		c.notePhoneName(ct, name)
	}
	return ct
}

func (c *china) notePhoneName(ct *city, name string) {
	for _, n := range c.phoneNames[ct] {
		if n == name {
			return
		}
	}
	c.phoneNames[ct] = append(c.phoneNames[ct], name)
}

func (c *china) official(p *province, name string) *city {
	if p.municipality {
		return nil
	}
	if to, ok := c.hand.renamed[name]; ok {
		name = to
	}
	for _, ct := range p.cities {
		if ct.zh == name {
			return ct
		}
	}
	stem := strings.TrimSuffix(strings.TrimSuffix(name, "地区"), "市")
	if utf8.RuneCountInString(stem) < 2 {
		return nil
	}
	var found *city
	for _, ct := range p.cities {
		if strings.HasPrefix(ct.zh, stem) {
			if found != nil {
				return nil
			}
			found = ct
		}
	}
	return found
}

// majority is the city most number blocks give an English name; ties go
// to an official division, then to the lower code.
func (c *china) majority(k key) *city {
	var best *city
	bn := 0
	for ct, n := range c.votes[k] {
		if best == nil || n > bn || n == bn && better(ct, best) {
			best, bn = ct, n
		}
	}
	return best
}

func better(a, b *city) bool {
	if a.official != b.official {
		return a.official
	}
	if a.code != b.code {
		return a.code < b.code
	}
	return a.zh < b.zh
}

func (c *china) allCities() []*city {
	var out []*city
	for _, p := range c.provinces {
		if p.self != nil {
			out = append(out, p.self)
		}
		out = append(out, p.cities...)
	}
	ks := make([]string, 0, len(c.extras))
	for k := range c.extras {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		if c.extras[k].en != "" {
			out = append(out, c.extras[k])
		}
	}
	return out
}

// assignAreaCodes gives each city the code of the most specific fixed-line
// entry naming it (an entry naming one place beats a list); ties go to the
// code the official area code table gives, then to the lower code. A city
// no entry names takes the official table's code, and a province all of
// whose entries share one code (the municipalities, Hainan's 0898) gives
// that code to every city in it.
func (c *china) assignAreaCodes(descs []parsedDesc) error {
	for _, d := range descs {
		if d.code == "" {
			continue
		}
		if c.provCodes[d.p] == nil {
			c.provCodes[d.p] = map[string]bool{}
		}
		c.provCodes[d.p][d.code] = true
		if len(d.zh) == 0 {
			c.cityCodes[d.p.self] = append(c.cityCodes[d.p.self], cand{d.code, 1})
			continue
		}
		for _, z := range d.zh {
			if ct := c.resolve(d.p, []string{z}, false); ct != nil {
				c.cityCodes[ct] = append(c.cityCodes[ct], cand{d.code, len(d.zh)})
			}
		}
	}
	for _, ct := range c.allCities() {
		official := map[string]bool{}
		var officialList []string
		seen := map[string]bool{}
		for _, n := range append([]string{ct.zh}, c.phoneNames[ct]...) {
			if seen[n] {
				continue
			}
			seen[n] = true
			for _, code := range c.dvCodes[n] {
				if !validAreaCode(code) {
					fmt.Fprintf(c.log, "gen: area code table: %s %s is no area code for libphonenumber, ignored\n", n, code)
					continue
				}
				if !official[code] {
					official[code] = true
					officialList = append(officialList, code)
				}
			}
		}
		code := c.choose(c.cityCodes[ct], official)
		if code == "" && len(officialList) > 0 {
			sort.Strings(officialList)
			code = officialList[0]
		}
		if code != "" && len(officialList) > 0 && !official[code] {
			c.conflicts = append(c.conflicts, fmt.Sprintf("%s%s: libphonenumber %s, area code table %s", ct.prov.zh, ct.zh, code, strings.Join(officialList, "/")))
		}
		ct.areaCode = code
	}
	for _, p := range c.provinces {
		for _, ct := range p.cities {
			if code, ok := c.hand.areaCodeOverrides[ct.code]; ok {
				if ct.areaCode != "" {
					return fmt.Errorf("areaCodeOverrides[%s] is stale: the sources give %s %s", ct.code, ct.zh, ct.areaCode)
				}
				if !validAreaCode(code) {
					return fmt.Errorf("areaCodeOverrides[%s]: %s is no area code", ct.code, code)
				}
				ct.areaCode = code
			}
		}
	}
	for _, p := range c.provinces {
		if len(c.provCodes[p]) != 1 {
			continue
		}
		for code := range c.provCodes[p] {
			p.areaCode = code
		}
		for _, ct := range c.allCities() {
			if ct.prov == p && ct.areaCode == "" {
				ct.areaCode = p.areaCode
			}
		}
	}
	return nil
}

// choose picks the code of the most specific entry, then the one the
// official table confirms, then the lowest.
func (c *china) choose(cs []cand, official map[string]bool) string {
	if len(cs) == 0 {
		return ""
	}
	s := append([]cand(nil), cs...)
	sort.Slice(s, func(i, j int) bool {
		if s[i].width != s[j].width {
			return s[i].width < s[j].width
		}
		if official[s[i].code] != official[s[j].code] {
			return official[s[i].code]
		}
		return s[i].code < s[j].code
	})
	return s[0].code
}

func sortedKeys(m map[key]*entry) []key {
	ks := make([]key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sortKeys(ks)
	return ks
}

func sortedCandKeys(m map[key][]cand) []key {
	ks := make([]key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sortKeys(ks)
	return ks
}

func sortKeys(ks []key) {
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].prov.code != ks[j].prov.code {
			return ks[i].prov.code < ks[j].prov.code
		}
		return ks[i].en < ks[j].en
	})
}
