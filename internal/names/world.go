package names

// worldProvince is Province in Chinese outside China: the Chinese name of
// the first-level subdivision from the generated table (see
// subdivisions.go), or the English name when the table does not know it.
func worldProvince(country, english string) string {
	if s := lookupSubdivision(country, english); s != nil && s.chinese != "" {
		return s.chinese
	}
	return english
}

// worldCity is City in Chinese outside China: the name of the table of
// the world's cities (lookupCity), else the English name.
func worldCity(country, provinceEnglish, english string, lat, lon float64) string {
	if zh, ok := lookupCity(country, english, lat, lon); ok {
		return zh
	}
	return english
}
