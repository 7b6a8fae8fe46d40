package names

import "testing"

// The engine calls these once per record; they must stay map lookups that
// allocate nothing (TestNoAllocations guards the allocations).

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
	b.ReportAllocs()
	for b.Loop() {
		sink = Province("CN", "Guangdong", zh)
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
