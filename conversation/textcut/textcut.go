// Package textcut cuts text to a budget of bytes without splitting a
// character: a platform's limit on one message, an index's on one term.
package textcut

import "unicode/utf8"

// Bytes returns s when it fits in n bytes, else its longest prefix of at
// most n bytes that is valid UTF-8.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
