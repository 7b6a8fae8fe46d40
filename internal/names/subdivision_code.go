package names

// SubdivisionCode returns the ISO 3166-2 code ("US-CA") of a country's
// first-level subdivision given by an English name as the IP data spells
// it ("California"), "" when the tables do not know it or it has none.
func SubdivisionCode(country, english string) string {
	if english == "" {
		return ""
	}
	if s := lookupSubdivision(country, english); s != nil {
		return s.code
	}
	return ""
}
