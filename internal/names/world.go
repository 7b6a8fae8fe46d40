package names

// worldProvince is Province in Chinese outside China: the English name
// until a table of the world's subdivisions names it.
func worldProvince(country, english string) string {
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
