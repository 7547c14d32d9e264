package source

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// normSpace collapses runs of white space to one space and trims.
func normSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// normTitle is a title reduced for identity: plain, collapsed, lower case.
func normTitle(s string) string {
	return strings.ToLower(normSpace(s))
}

// plainText strips markup and decodes entities; text that is not HTML
// passes through unchanged apart from entity decoding.
func plainText(s string) string {
	if !strings.Contains(s, "<") {
		if strings.Contains(s, "&") {
			s = html.UnescapeString(s)
		}
		return normSpace(s)
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return normSpace(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				skip++
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6":
				b.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				if skip > 0 {
					skip--
				}
			case "p", "div", "li", "tr", "td":
				b.WriteByte(' ')
			}
		}
	}
}

// digest is the hex SHA-256 of the parts, each normalised, joined by a
// separator that cannot occur inside them.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(normSpace(p)))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// resolve makes ref absolute against base; unusable references give "".
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if base != nil {
		r = base.ResolveReference(r)
	}
	if !r.IsAbs() || r.Host == "" {
		return ""
	}
	switch r.Scheme {
	case "http", "https":
		return r.String()
	}
	return ""
}

// truncate shortens s to at most n runes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// alt lists fallback identities, skipping empties and the primary id.
func alt(id string, candidates ...string) []string {
	var out []string
	for _, c := range candidates {
		if c != "" && c != id {
			out = append(out, c)
		}
	}
	return out
}
