package render

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
)

// Plain renders m as a phone notification (ntfy, Bark): the headline, the rest as
// plain text, and the link the notification opens: the first item's, or
// for a message without linked items (an inbound hook's summary) the
// first link in its text.
// Nothing is markup: an HTML-looking title stays the characters it is.
func Plain(m delivery.Message, lang string, zone *time.Location, at time.Time) (title, text, link string) {
	title, rest, _ := strings.Cut(Text(m, lang, zone, at), "\n")
	text = strings.TrimSpace(rest)
	if text == "" {
		text = title
	}
	for _, it := range m.Items {
		if isLink(it.URL) {
			link = it.URL
			break
		}
	}
	if link == "" {
		for _, w := range strings.Fields(m.Text) {
			if w = linkIn(w); w != "" {
				link = w
				break
			}
		}
	}
	return strings.ToValidUTF8(title, "\uFFFD"), strings.ToValidUTF8(text, "\uFFFD"), link
}

// linkIn is the link a word of text starts with: up to the first
// character no URL holds unescaped (text often runs on without a space),
// without the punctuation that ends a sentence; "" if the word is none.
func linkIn(w string) string {
	if i := strings.IndexFunc(w, func(r rune) bool { return r > unicode.MaxASCII || strings.ContainsRune("<>\"`{}|\\^", r) }); i >= 0 {
		w = w[:i]
	}
	if w = strings.TrimRight(w, ".,;:!?)]'"); isLink(w) {
		return w
	}
	return ""
}

func isLink(s string) bool {
	return (strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) && !strings.ContainsFunc(s, unicode.IsSpace)
}

// CutBytes cuts s to at most n UTF-8 bytes between characters, ending a
// cut one in "…".
func CutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	if n < len(ell) {
		return ""
	}
	i := n - len(ell)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.TrimRight(s[:i], " ") + ell
}

// CutText cuts text to at most n UTF-8 bytes: after the last whole line
// that fits when a cut line would lose most of itself, else between
// characters; never inside a link, which is dropped whole rather than
// sent broken. A cut text ends in "…".
func CutText(text string, n int) string {
	if len(text) <= n {
		return text
	}
	const ell = "…"
	if n < len(ell) {
		return ""
	}
	i := n - len(ell)
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	// Never inside a link: back to where the word at the cut began.
	start := strings.LastIndexFunc(text[:i], unicode.IsSpace) + 1
	end := strings.IndexFunc(text[start:], unicode.IsSpace)
	if end < 0 {
		end = len(text) - start
	}
	if isLink(text[start:start+end]) || strings.HasPrefix(text[start:], "http") {
		i = start
	}
	// A line cut near its start reads worse than a line left out.
	if nl := strings.LastIndexByte(text[:i], '\n'); nl >= 0 && i-nl < 16 {
		i = nl
	}
	return strings.TrimRightFunc(text[:i], unicode.IsSpace) + ell
}
