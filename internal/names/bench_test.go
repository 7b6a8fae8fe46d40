package names

import "testing"

// The engine calls these once per record; they must stay map lookups or
// binary searches that allocate nothing (TestNoAllocations guards the
// allocations).

var sink string

func BenchmarkCountry(b *testing.B) {
	b.ReportAllocs()
	Country("US", zh)
	for b.Loop() {
		sink = Country("US", zh)
		sink = Country("CN", en)
	}
}

func BenchmarkContinent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sink = Continent(ContinentCode("DE"), zh)
	}
}

func BenchmarkProvince(b *testing.B) {
	for _, c := range []struct{ name, country, english string }{
		{"CN", "CN", "Guangdong"},
		{"world", "US", "California"},
		{"world-stripped", "KR", "Gyeonggi-do"},
		{"world-accents", "BR", "São Paulo"},
		{"world-unknown", "FR", "Nowhere Région"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = Province(c.country, c.english, zh)
			}
		})
	}
}

func BenchmarkCity(b *testing.B) {
	b.Run("known", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = City("CN", "Guangdong", "Shenzhen", nan, nan, zh)
		}
	})
	b.Run("decorated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = City("CN", "Guangdong", "Guangzhou (Yuexiu Qu)", nan, nan, zh)
		}
	})
	b.Run("town by coordinates", func(b *testing.B) {
		b.ReportAllocs()
		City("CN", "Henan", "Guancheng", 34.7657, 113.753, zh)
		for b.Loop() {
			sink = City("CN", "Henan", "Guancheng", 34.7657, 113.753, zh)
		}
	})
	b.Run("offshore", func(b *testing.B) {
		// Outside every county: the nearest-edge search.
		b.ReportAllocs()
		for b.Loop() {
			sink = City("CN", "Hebei", "Beidaihe Haibin", 38.8495, 119.789, zh)
		}
	})
	b.Run("unknown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = City("CN", "Fujian", "Wenquan", nan, nan, zh)
		}
	})
	b.Run("world", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = City("US", "California", "Mountain View", 37.422, -122.085, zh)
		}
	})
	b.Run("world unknown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = City("US", "Virginia", "Ashburn", 39.0438, -77.4874, zh)
		}
	})
}

func BenchmarkAreaCode(b *testing.B) {
	b.Run("CN", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = AreaCode("CN", "Guangdong", "Shenzhen", nan, nan)
		}
	})
	b.Run("US", func(b *testing.B) {
		b.ReportAllocs()
		AreaCode("US", "", "", nan, nan)
		for b.Loop() {
			sink = AreaCode("US", "California", "Mountain View", nan, nan)
		}
	})
}

func BenchmarkDistrict(b *testing.B) {
	b.Run("town named", func(b *testing.B) {
		b.ReportAllocs()
		District("CN", "Henan", "Guancheng", "", 34.7657, 113.753, zh)
		for b.Loop() {
			sink = District("CN", "Henan", "Guancheng", "", 34.7657, 113.753, zh)
		}
	})
	b.Run("district named", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = District("CN", "Guangdong", "Wushipai", "Nanshan Qu", 22.5138, 113.908, zh)
		}
	})
	b.Run("town contained", func(b *testing.B) {
		// No county of its name: the name match fails, containment decides.
		b.ReportAllocs()
		for b.Loop() {
			sink = District("CN", "Shanxi", "Liuxiang", "", 37.8734, 112.563, zh)
		}
	})
}

func BenchmarkWholeName(b *testing.B) {
	for _, c := range []struct{ name, country, city string }{
		{"whole", "DE", "Frankfurt (Oder)"},
		{"district", "KR", "Seoul (Toegye-ro)"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				whole = WholeName(c.country, c.city)
			}
		})
	}
}

var whole bool
