package kind

import (
	"strings"

	"golang.org/x/net/html"
)

// HTMLText is the text of an HTML fragment: markup stripped, entities
// decoded (once), white space collapsed.
func HTMLText(s string) string {
	return strings.Join(strings.Fields(HTMLLines(s)), " ")
}

// HTMLLines is the text of an HTML fragment with its lines apart: markup
// stripped, entities decoded (once), a line break where a block element
// or <br> breaks the text, and nowhere else (a line break in the markup
// is white space).
func HTMLLines(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			if skip == 0 {
				b.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(z.Text())))
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				skip++
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6":
				b.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				if skip > 0 {
					skip--
				}
			case "p", "div", "li", "tr", "td":
				b.WriteByte('\n')
			}
		}
	}
}
