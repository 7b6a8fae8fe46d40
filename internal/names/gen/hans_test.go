package main

import "testing"

func TestSimplified(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"萊塞斯卡爾德-恩戈爾達", "莱塞斯卡尔德-恩戈尔达", true},
		{"烏泰他尼府", "乌泰他尼府", true},
		{"悉尼", "悉尼", true},
		{"臺灣", "台湾", true},
		{"広島", "", false},       // a Japanese form, not Chinese
		{"マウンテンビュー", "", false}, // kana
		{"Sydney", "", false},
		{"", "", false},
	} {
		got, ok := simplified(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("simplified(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
