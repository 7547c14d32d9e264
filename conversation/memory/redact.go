package memory

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/herald-bridge/herald/conversation/text"
)

// Redacted stands in for whatever looked like a secret.
const Redacted = "[redacted]"

var (
	// A URL ends at a space, a quote or an angle bracket, and at CJK or
	// full-width punctuation (U+3000–U+303F, U+FF00–U+FFEF: a full-width
	// parenthesis, comma or full stop), which Chinese text puts right
	// after a link.
	reURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x{3000}-\x{303F}\x{FF00}-\x{FFEF}]+`)
	// Secrets by their known shapes: herald's own inbox and webhook
	// secrets, bearer headers, Telegram bot tokens, Canvas access tokens
	// (<account>~<key>), API keys of model providers, Slack-style tokens.
	reShaped = regexp.MustCompile(`(?i)(\bhin_[0-9a-f]{8,}|\bwhsec_[A-Za-z0-9+/=]{8,}|\bbearer\s+\S+|\bbot\d+:[A-Za-z0-9_-]{20,}|\b\d{6,12}:[A-Za-z0-9_-]{30,}|\b\d{1,12}~[A-Za-z0-9]{20,}|\bsk-[A-Za-z0-9_-]{16,}|\bxox[abprs]-[A-Za-z0-9-]{10,})`)
	// A secret named by its key, in English or another language the
	// conversation speaks (text.Words.Secrets): "token: abc",
	// "password=abc", and the same with a full-width colon (U+FF1A).
	// The name stays, the value goes; the value ends at a space or an
	// ASCII or CJK comma, semicolon or full stop.
	reNamed = regexp.MustCompile(`(?i)(\b(?:access[_ -]?token|api[_ -]?key|token|secret|password|passwd|pwd)\b` + secretNames() + `)(\s*(?:is\s+|[:=\x{FF1A}]\s*|\s))([^\s,;\x{FF0C}\x{3002}\x{FF1B}]+)`)
	// Anything else that looks generated: a long run of letters and digits
	// (with the usual token punctuation) that has both.
	reLong = regexp.MustCompile(`[A-Za-z0-9_\-+/=~.]{24,}`)
)

// secretNames are the words other languages name a secret by, as
// alternatives of a regular expression ("|word|word").
func secretNames() string {
	var b strings.Builder
	for _, c := range text.Catalogs() {
		for _, w := range c.Words.Secrets {
			b.WriteString("|" + regexp.QuoteMeta(w))
		}
	}
	return b.String()
}

// Redact returns text fit to be kept: URLs lose their credentials, query
// and fragment (a token often rides there), and whatever looks like a
// token, key or password is replaced by [redacted]. It errs on the side
// of removing.
func Redact(text string) string {
	text = reURL.ReplaceAllStringFunc(text, showURL)
	text = reShaped.ReplaceAllString(text, Redacted)
	text = reNamed.ReplaceAllStringFunc(text, func(m string) string {
		sub := reNamed.FindStringSubmatch(m)
		if sub[3] == Redacted {
			return m
		}
		return sub[1] + sub[2] + Redacted
	})
	return reLong.ReplaceAllStringFunc(text, func(w string) string {
		if strings.Contains(w, "://") || !mixed(w) {
			return w
		}
		return Redacted
	})
}

// showURL keeps scheme, host and path of a URL: what it points at, not
// how it was unlocked.
func showURL(raw string) string {
	trail := ""
	for raw != "" && strings.ContainsAny(raw[len(raw)-1:], ".,;:)]") {
		trail = raw[len(raw)-1:] + trail
		raw = raw[:len(raw)-1]
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Redacted + trail
	}
	segs := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segs {
		if len(seg) >= 20 && mixed(seg) {
			segs[i] = Redacted // a private feed's key in its path
		}
	}
	s := u.Scheme + "://" + u.Host + strings.Join(segs, "/")
	if u.RawQuery != "" || u.Fragment != "" {
		s += "?" + Redacted
	}
	return s + trail
}

// mixed reports whether w has both a letter and a digit, and is not a
// path or a dotted name made of plain words.
func mixed(w string) bool {
	var letter, digit bool
	for _, r := range w {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letter = true
		}
	}
	if !letter || !digit {
		return false
	}
	// A path or dotted name of short parts ("docs/v2/index.html") is kept.
	for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '/' || r == '.' || r == '-' || r == '_' }) {
		if len(part) >= 20 {
			return true
		}
	}
	return false
}
