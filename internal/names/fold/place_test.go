package fold

import "testing"

func TestAppend(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"São Paulo", "sao paulo"},
		{"SAO-PAULO", "sao paulo"},
		{"  Frankfurt  am Main ", "frankfurt am main"},
		{"N'Djamena", "ndjamena"},
		{"Ta’izz", "taizz"},
		{"Saint-Denis", "saint denis"},
		{"St. Louis", "st louis"},
		{"Düsseldorf", "dusseldorf"},
		{"Straße", "strasse"},
		{"Łódź", "lodz"},
		{"Tromsø", "tromso"},
		{"Đà Nẵng", "da nang"},
		{"İstanbul", "istanbul"},
		{"Москва", "москва"},
		{"東京", "東京"},
		{"", ""},
		{" - ", ""},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLatin(t *testing.T) {
	if !Latin([]byte("sao paulo")) || Latin([]byte("москва")) {
		t.Error("Latin: wrong answer")
	}
}

func TestAppendNoAllocations(t *testing.T) {
	var buf [64]byte
	if n := testing.AllocsPerRun(100, func() { _ = Append(buf[:0], "São Paulo (Centro)") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
