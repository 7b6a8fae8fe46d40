package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// A phoneDesc is one geocoding description of libphonenumber for a +86
// prefix, in English ("Shenzhen, Guangdong", "Chengdu/Ziyang/Meishan,
// Sichuan", "Beijing") and in Chinese ("广东省深圳市").
type phoneDesc struct {
	en, zh string
}

// enCities splits the English description into its city names and its
// province ("Beijing" names a municipality: the city is the province).
func (d phoneDesc) enCities() (cities []string, province string) {
	city, prov, ok := strings.Cut(d.en, ", ")
	if !ok {
		return []string{d.en}, d.en
	}
	return strings.Split(city, "/"), prov
}

// An areaEntry is a valid Chinese fixed-line area code with its geocoding.
type areaEntry struct {
	code string // with the trunk prefix: "0755"
	desc phoneDesc
}

// chinaFallbacks are what GetGeocodingForNumber answers when it has no
// description for a prefix (it falls back to the country's name).
var chinaFallbacks = map[string]bool{"China": true, "中国": true}

func geocode(num *phonenumbers.PhoneNumber) (phoneDesc, bool) {
	en, err := phonenumbers.GetGeocodingForNumber(num, "en")
	if err != nil || en == "" || chinaFallbacks[en] {
		return phoneDesc{}, false
	}
	zh, err := phonenumbers.GetGeocodingForNumber(num, "zh")
	if err != nil || zh == "" || chinaFallbacks[zh] || !hasHan(zh) || hasHan(en) {
		return phoneDesc{}, false
	}
	return phoneDesc{en: en, zh: zh}, true
}

// areaCodes enumerates China's geographic area codes (10, 2X, and 3XX to
// 9XX after the trunk prefix 0) that libphonenumber's metadata accepts for
// a fixed-line number and that its geocoding data describes.
//
// The geocoding data alone cannot give the codes: it stores some prefixes
// shortened ("8633" for 0335 Qinhuangdao, the only code in 033X), so every
// candidate code is checked with a fixed-line number the metadata validates
// and whose area code length the metadata confirms.
func areaCodes() ([]areaEntry, error) {
	var candidates []string
	candidates = append(candidates, "10")
	for i := 20; i <= 29; i++ {
		candidates = append(candidates, strconv.Itoa(i))
	}
	for i := 300; i <= 999; i++ {
		candidates = append(candidates, strconv.Itoa(i))
	}
	var out []areaEntry
	for _, a := range candidates {
		num := fixedLine(a)
		if num == nil {
			continue
		}
		if d, ok := geocode(num); ok {
			out = append(out, areaEntry{code: "0" + a, desc: d})
		}
	}
	if len(out) < 300 {
		return nil, fmt.Errorf("libphonenumber: only %d Chinese area codes found, expected more than 300", len(out))
	}
	return out, nil
}

// fixedLine returns a fixed-line number with area code a (without the
// trunk 0) that libphonenumber's metadata accepts, with a as its area code,
// or nil if there is none: a is no area code in use.
func fixedLine(a string) *phonenumbers.PhoneNumber {
	// Subscriber numbers of both lengths and several leading digits, since
	// the metadata's patterns depend on them per area.
	for _, sub := range []string{"62345678", "6234567", "22345678", "2234567", "52345678", "5234567", "82345678", "8234567", "32345678", "3234567"} {
		num, err := phonenumbers.Parse("+86"+a+sub, "")
		if err != nil || !phonenumbers.IsValidNumber(num) {
			continue
		}
		t := phonenumbers.GetNumberType(num)
		if t != phonenumbers.FIXED_LINE && t != phonenumbers.FIXED_LINE_OR_MOBILE {
			continue
		}
		if phonenumbers.GetLengthOfGeographicalAreaCode(num) == len(a) {
			return num
		}
	}
	return nil
}

// validAreaCode reports whether libphonenumber accepts code ("0558") as a
// Chinese area code.
func validAreaCode(code string) bool {
	return len(code) > 1 && code[0] == '0' && fixedLine(code[1:]) != nil
}

// mobileDescs counts the descriptions libphonenumber gives China's mobile
// number blocks (1[3-9]XXXXX, the longest prefixes its data holds). They
// name one prefecture each, in the current English spelling (Hohhot,
// Ordos), which pairs English and Chinese names far more often than the
// fixed-line data, whose English names are often the seat town (Yuci for
// Jinzhong) or an old romanization (Huhehaote).
func mobileDescs() (map[phoneDesc]int, error) {
	counts := map[phoneDesc]int{}
	num := &phonenumbers.PhoneNumber{}
	for p := 1300000; p <= 1999999; p++ {
		num.CountryCode = proto32(86)
		num.NationalNumber = proto64(uint64(p) * 10000)
		if d, ok := geocode(num); ok {
			counts[d]++
		}
	}
	if len(counts) < 300 {
		return nil, fmt.Errorf("libphonenumber: only %d mobile descriptions for China, expected more than 300", len(counts))
	}
	return counts, nil
}

func proto32(v int32) *int32   { return &v }
func proto64(v uint64) *uint64 { return &v }
