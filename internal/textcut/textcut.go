// Package textcut shortens text that goes into reports, logs and protocol messages to a
// byte bound without splitting a rune.
package textcut

import (
	"strings"
	"unicode/utf8"
)

// Cut shortens s to at most n bytes, on a rune boundary, marking the cut with "…". Invalid
// UTF-8 (which protobuf refuses to encode) becomes U+FFFD.
func Cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	s = s[:n-len(mark)]
	for len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1] // part of a rune the cut split
	}
	return s + mark
}
