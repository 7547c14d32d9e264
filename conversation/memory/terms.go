// Package memory keeps the conversation history (docs/chat.md, Memory): every
// turn of a chat, per principal or per group chat, bounded in age and
// count, searchable in Chinese and English alike.
//
// Text is indexed by terms: a Chinese (or Japanese, Korean) run by each of
// its characters and each pair of neighbouring characters, a word of any
// other script lowercased. A query of two or more CJK characters looks
// for all its character pairs, a one-character query for the character,
// a word for the word; every hit is then checked against the stored text
// for the exact phrase, so that a four-character phrase ("exam notice" in
// Chinese) never matches a turn that only has its two words apart.
package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herald-bridge/herald/conversation/textcut"
)

// Bounds of the index.
const (
	// maxTermBytes is the longest term indexed; a longer word is cut.
	maxTermBytes = 64
	// maxTerms bounds the terms one turn is indexed under.
	maxTerms = 2000
)

type class int

const (
	sep class = iota
	cjk
	word
)

func classOf(r rune) class {
	switch {
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
		return cjk
	case unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.Mn, r):
		return word
	}
	return sep
}

// fold maps full-width forms to their ASCII twins and lowercases.
func fold(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		r -= 0xFEE0
	case r == 0x3000:
		r = ' '
	}
	return unicode.ToLower(r)
}

// canon is the form text is matched in: folded and lowercased, one space
// between words, between a CJK run and a word, and for every run of
// punctuation or space, with a space at both ends. CJK characters next to
// each other stay together.
func canon(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(' ')
	prev := sep
	for _, r := range s {
		r = fold(r)
		c := classOf(r)
		switch {
		case c == sep:
			if prev != sep {
				b.WriteByte(' ')
			}
		case prev != sep && prev != c:
			b.WriteByte(' ')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		prev = c
	}
	if prev != sep {
		b.WriteByte(' ')
	}
	return b.String()
}

// runs calls fn for every CJK run and every word of a canonical text.
func runs(c string, fn func(text string, cjk bool)) {
	for _, f := range strings.Fields(c) {
		r, _ := utf8.DecodeRuneInString(f)
		fn(f, classOf(r) == cjk)
	}
}

// Terms are the index terms of a text: each CJK character and each pair
// of neighbouring CJK characters, each other word lowercased; once each.
func Terms(text string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if len(out) < maxTerms && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	runs(canon(text), func(f string, isCJK bool) {
		if !isCJK {
			add(textcut.Bytes(f, maxTermBytes))
			return
		}
		rs := []rune(f)
		for i, r := range rs {
			add(string(r))
			if i+1 < len(rs) {
				add(string(rs[i : i+2]))
			}
		}
	})
	return out
}

// Query is a parsed search: the terms to look up in the index and the
// phrases every hit must contain.
type Query struct {
	Terms   []string
	Phrases []string // canonical, without the outer spaces
}

// quotes pairs the quote marks a phrase may be typed in.
// quotes open and close a phrase: ASCII and curly quotes, and the CJK
// corner brackets (U+300C/D, U+300E/F).
var quotes = map[rune]rune{'"': '"', '“': '”', '\u300c': '\u300d', '\u300e': '\u300f', '\'': '\''}

// ParseQuery reads what someone searches for: words and CJK text
// separated by spaces, or a phrase in quotes ("exam notice", or the same
// in corner brackets).
// Each part must appear in a turn; a part of words must appear as whole
// words.
func ParseQuery(q string) Query {
	var parts []string
	rs := []rune(q)
	for i := 0; i < len(rs); {
		r := rs[i]
		if unicode.IsSpace(r) || r == 0x3000 {
			i++
			continue
		}
		if end, ok := quotes[r]; ok {
			j := i + 1
			for j < len(rs) && rs[j] != end {
				j++
			}
			parts = append(parts, string(rs[i+1:min(j, len(rs))]))
			i = j + 1
			continue
		}
		j := i
		for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != 0x3000 {
			j++
		}
		parts = append(parts, string(rs[i:j]))
		i = j
	}
	var out Query
	seen := map[string]bool{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out.Terms = append(out.Terms, t)
		}
	}
	for _, p := range parts {
		c := canon(p)
		phrase := strings.TrimSpace(c)
		if phrase == "" {
			continue
		}
		out.Phrases = append(out.Phrases, phrase)
		runs(c, func(f string, isCJK bool) {
			if !isCJK {
				add(textcut.Bytes(f, maxTermBytes))
				return
			}
			rs := []rune(f)
			if len(rs) == 1 {
				add(f)
				return
			}
			for i := 0; i+1 < len(rs); i++ {
				add(string(rs[i : i+2]))
			}
		})
	}
	return out
}

// Empty reports whether the query has nothing to look for.
func (q Query) Empty() bool { return len(q.Terms) == 0 }

// Match reports whether text holds every phrase of q: a CJK end of a
// phrase may sit inside a longer CJK run, a word end must be a whole word.
func (q Query) Match(text string) bool {
	c := canon(text)
	for _, p := range q.Phrases {
		needle := p
		if first, _ := utf8.DecodeRuneInString(p); classOf(first) != cjk {
			needle = " " + needle
		}
		if last, _ := utf8.DecodeLastRuneInString(p); classOf(last) != cjk {
			needle += " "
		}
		if !strings.Contains(c, needle) {
			return false
		}
	}
	return len(q.Phrases) > 0
}
