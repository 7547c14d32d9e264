package source

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/net/html"

	"github.com/herald-bridge/herald/tasks/source/kind"
)

// normSpace collapses runs of white space to one space and trims.
func normSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// normTitle is a title reduced for identity: plain, collapsed, lower case.
func normTitle(s string) string {
	return strings.ToLower(normSpace(s))
}

// plainText is the text of a field whose type is not declared (RSS
// titles and descriptions, JSON values, calendar descriptions): markup is
// stripped and entities decoded only when the field looks like HTML, so
// "Vector<T>" and "Use the <video> element" (already decoded once by the
// XML reader) stay as written.
func plainText(s string) string {
	if looksLikeHTML(s) {
		return htmlText(s)
	}
	return normSpace(s)
}

// plainTitle is plainText for a title of undeclared type (RSS): a void
// element alone does not make it HTML. Titles name tags far more often
// than they break lines with them, and an entity-escaped "Why &lt;br&gt;
// breaks layout" reaches here as "Why <br> breaks layout", which is text.
// An entity left after the XML reader's decoding, a comment or a closed
// element (<b>…</b>) still makes it HTML.
func plainTitle(s string) string {
	if looksLike(s, false) {
		return htmlText(s)
	}
	return normSpace(s)
}

// htmlText is the text of an HTML fragment: markup stripped, entities
// decoded (once), white space collapsed (kind.HTMLText).
func htmlText(s string) string { return kind.HTMLText(s) }

// entityRef matches a character or named entity reference.
var entityRef = regexp.MustCompile(`&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});`)

// htmlElements are the elements whose presence makes a field HTML.
var htmlElements = map[string]bool{
	"a": true, "abbr": true, "b": true, "big": true, "blockquote": true, "cite": true, "code": true,
	"dd": true, "del": true, "div": true, "dl": true, "dt": true, "em": true, "figcaption": true,
	"figure": true, "font": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"i": true, "iframe": true, "ins": true, "kbd": true, "li": true, "mark": true, "ol": true, "p": true,
	"pre": true, "q": true, "s": true, "samp": true, "script": true, "small": true, "span": true,
	"strike": true, "strong": true, "style": true, "sub": true, "sup": true, "table": true, "tbody": true,
	"td": true, "th": true, "thead": true, "tr": true, "tt": true, "u": true, "ul": true, "var": true,
	"video": true, "audio": true, "picture": true, "section": true, "article": true, "header": true,
	"footer": true, "nav": true, "aside": true, "main": true, "center": true, "caption": true,
}

// voidElements need no end tag to count as markup.
var voidElements = map[string]bool{"br": true, "img": true, "hr": true, "wbr": true, "source": true, "embed": true}

// looksLikeHTML: an entity reference, a void element (<br>, <img …>) or
// a known element that is also closed (<b>…</b>). A lone "<video>" or
// "<T>" is text that mentions a tag.
func looksLikeHTML(s string) bool { return looksLike(s, true) }

// looksLike is looksLikeHTML; voids says whether a void element alone
// counts as markup.
func looksLike(s string, voids bool) bool {
	if !strings.ContainsAny(s, "<&") {
		return false
	}
	if strings.Contains(s, "&") && entityRef.MatchString(s) {
		return true
	}
	if !strings.Contains(s, "<") {
		return false
	}
	z := html.NewTokenizer(strings.NewReader(s))
	open := map[string]bool{}
	for {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			n := string(name)
			if voidElements[n] && voids {
				return true
			}
			if htmlElements[n] {
				open[n] = true
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if open[string(name)] {
				return true
			}
		case html.CommentToken:
			return true
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
