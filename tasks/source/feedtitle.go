package source

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"

	"github.com/tidwall/gjson"
)

// feedTitle is a feed's own title as plain text (RSS and RDF: the
// channel's; Atom: the feed's; JSON Feed: its "title"), "" when it has
// none before its first item. It reads no further than that first item.
func feedTitle(body []byte, contentType string) string {
	body = toUTF8(body, contentType, true)
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		return normSpace(gjson.GetBytes(trimmed, "title").String())
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // UTF-8 already
	var path []string
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			if name == "item" || name == "entry" {
				return ""
			}
			atom := len(path) == 1 && path[0] == "feed"
			channel := len(path) == 2 && path[1] == "channel"
			if name != "title" || !atom && !channel {
				path = append(path, name)
				continue
			}
			var v struct {
				Type  string `xml:"type,attr"`
				Text  string `xml:",chardata"`
				Inner string `xml:",innerxml"`
			}
			if d.DecodeElement(&v, &t) != nil {
				return ""
			}
			switch {
			case strings.Contains(v.Type, "xhtml"):
				return htmlText(v.Inner)
			case strings.Contains(v.Type, "html"):
				return htmlText(v.Text)
			case atom:
				return normSpace(v.Text)
			}
			return plainTitle(v.Text)
		case xml.EndElement:
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		}
	}
}
