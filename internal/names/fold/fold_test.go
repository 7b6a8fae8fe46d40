package fold

import "testing"

func TestKeys(t *testing.T) {
	for _, c := range []struct{ name, full, stripped string }{
		{"Île-de-France", "iledefrance", "iledefrance"},
		{"ILE DE FRANCE", "iledefrance", "iledefrance"},
		{"São Paulo", "saopaulo", "saopaulo"},
		{"Nghệ An Province", "ngheanprovince", "nghean"},
		{"Gyeonggi-do", "gyeonggido", "gyeonggi"},
		{"Province of Bologna", "provinceofbologna", "bologna"},
		{"Kharkivs’ka Oblast’", "kharkivskaoblast", "kharkivska"},
		{"Baden-Württemberg", "badenwurttemberg", "badenwurttemberg"},
		{"Schleswig-Holstein", "schleswigholstein", "schleswigholstein"},
		{"Łódź Voivodeship", "lodzvoivodeship", "lodz"},
		{"Tokyo-to", "tokyoto", "tokyo"},
		{"Capital Region", "capitalregion", "capitalregion"}, // nothing but generic words
		{"Federal District", "federaldistrict", "federaldistrict"},
		{"Ħamrun", "hamrun", "hamrun"},
		{"  Oslo  ", "oslo", "oslo"},
	} {
		var buf Buf
		full, stripped, ok := Keys(&buf, c.name)
		if !ok || string(full) != c.full || string(stripped) != c.stripped {
			t.Errorf("Keys(%q) = %q, %q, %v; want %q, %q", c.name, full, stripped, ok, c.full, c.stripped)
		}
	}
	for _, name := range []string{"", "---", "東京", string(make([]byte, MaxLen+1))} {
		var buf Buf
		if _, _, ok := Keys(&buf, name); ok {
			t.Errorf("Keys(%q): ok, want no key", name)
		}
	}
	long := ""
	for len(long) <= MaxLen {
		long += "abc "
	}
	var buf Buf
	if _, _, ok := Keys(&buf, long); ok {
		t.Errorf("Keys of a %d-byte name: ok, want no key", len(long))
	}
}

func TestKeysNoAllocations(t *testing.T) {
	var buf Buf
	if n := testing.AllocsPerRun(100, func() { Keys(&buf, "Nghệ An Province") }); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}
