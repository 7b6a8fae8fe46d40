package main

import (
	"strings"
	"sync"
	"unicode"

	"github.com/longbridgeapp/opencc"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// t2s converts Traditional Chinese to Simplified with OpenCC's dictionaries
// (characters and phrases), as embedded in github.com/longbridgeapp/opencc.
var t2s = sync.OnceValues(func() (*opencc.OpenCC, error) { return opencc.New("t2s") })

// simplified converts a Chinese name to Simplified Chinese and reports
// whether the result is a name a reader of Simplified Chinese would accept:
// Han characters (with the separators names use: "·", "-", "－", space)
// that GB 2312 can encode. That rejects Japanese forms OpenCC leaves alone
// (広島, anything with kana) and rare variants, which are better left
// unnamed than named wrongly.
func simplified(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false
	}
	c, err := t2s()
	if err != nil {
		return "", false
	}
	out, err := c.Convert(s)
	if err != nil || out == "" {
		return "", false
	}
	han := false
	for _, r := range out {
		switch {
		case unicode.Is(unicode.Han, r):
			han = true
		case r == '·' || r == '-' || r == '－' || r == ' ':
		default:
			return "", false
		}
	}
	if !han {
		return "", false
	}
	if _, err := simplifiedchinese.HZGB2312.NewEncoder().String(out); err != nil {
		return "", false
	}
	return out, true
}
