package ipatlas_test

import (
	"testing"

	"github.com/ipatlas/ipatlas"
)

func TestMessage(t *testing.T) {
	for _, tt := range []struct {
		code   ipatlas.ErrorCode
		lang   ipatlas.Lang
		detail string
		want   string
	}{
		{ipatlas.CodeInvalidIP, ipatlas.English, "", "Invalid IP address format"},
		{ipatlas.CodeInvalidIP, ipatlas.Chinese, "", "无效的 IP 地址格式"},
		{ipatlas.CodeInvalidIP, ipatlas.English, "empty input", "Invalid IP address format: empty input"},
		{ipatlas.CodeInvalidIP, ipatlas.Chinese, "输入为空", "无效的 IP 地址格式：输入为空"},
	} {
		if got := tt.code.Message(tt.lang, tt.detail); got != tt.want {
			t.Errorf("%s.Message(%v, %q) = %q, want %q", tt.code, tt.lang, tt.detail, got, tt.want)
		}
	}
}
