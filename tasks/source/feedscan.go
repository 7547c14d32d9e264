package source

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/herald-bridge/herald/tasks/watch"
)

// feedShape is what a pass over a feed's XML tells beyond what the feed
// reader keeps: the declared type of each Atom entry's title.
type feedShape struct {
	// titleTypes holds, per entry in document order, the type attribute
	// of its <title> ("" for RSS items and untyped titles).
	titleTypes []string
}

// scanXMLFeed reads the whole document once with a forgiving XML
// tokenizer (undeclared entities and bare ampersands pass, as they do in
// the feed reader) and fails when the document is not XML, ends before
// its elements do, or closes an element that is not the one open (an
// unclosed <title> swallows the items after it): a truncated or broken
// document must be an error, never a feed with fewer items, which would
// read as removals. HTML void elements left open inside escaped-less
// descriptions (<br>, <img>) are forgiven.
func scanXMLFeed(body []byte) (feedShape, error) {
	var shape feedShape
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // already UTF-8
	var stack []string
	entry := -1 // index in titleTypes of the entry being read
	entryDepth := 0
	roots := 0
	for {
		tok, err := d.RawToken()
		if err != nil {
			if errors.Is(err, io.EOF) {
				switch {
				case roots == 0:
					return shape, watch.Errorf(watch.Schema, "not a readable feed: no root element")
				case len(stack) > 0:
					return shape, watch.Errorf(watch.Schema, "not a readable feed: the document ends inside <%s> (truncated?)", stack[len(stack)-1])
				}
				return shape, nil
			}
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return shape, watch.Errorf(watch.Schema, "not a readable feed: malformed XML at line %d: %s", se.Line, se.Msg)
			}
			return shape, watch.Errorf(watch.Schema, "not a readable feed: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := qname(t.Name)
			if len(stack) == 0 {
				roots++
			}
			stack = append(stack, name)
			local := strings.ToLower(t.Name.Local)
			switch {
			case (local == "entry" || local == "item") && entry < 0:
				shape.titleTypes = append(shape.titleTypes, "")
				entry, entryDepth = len(shape.titleTypes)-1, len(stack)
			case local == "title" && entry >= 0 && len(stack) == entryDepth+1:
				for _, a := range t.Attr {
					if a.Name.Local == "type" {
						shape.titleTypes[entry] = strings.ToLower(strings.TrimSpace(a.Value))
					}
				}
			}
		case xml.EndElement:
			name := qname(t.Name)
			for len(stack) > 0 && stack[len(stack)-1] != name && voidHTML[strings.ToLower(stack[len(stack)-1])] {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 || stack[len(stack)-1] != name {
				open := "nothing"
				if len(stack) > 0 {
					open = "<" + stack[len(stack)-1] + ">"
				}
				line, _ := d.InputPos()
				return shape, watch.Errorf(watch.Schema, "not a readable feed: malformed XML at line %d: </%s> closes %s", line, name, open)
			}
			stack = stack[:len(stack)-1]
			if entry >= 0 && len(stack) < entryDepth {
				entry = -1
			}
		}
	}
}

// voidHTML are HTML elements feeds leave open inside unescaped markup.
var voidHTML = map[string]bool{"br": true, "img": true, "hr": true, "wbr": true, "input": true, "meta": true,
	"area": true, "col": true, "param": true, "source": true, "embed": true}

func qname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}
