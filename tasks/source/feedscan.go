package source

import (
	"bytes"
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

// scanXMLFeed checks a feed's element structure to its end and fails when
// the document is not XML, ends before its elements do, or closes an
// element that is not the one open (an unclosed <title> swallows the items
// after it): a truncated or broken document must be an error, never a
// feed with fewer items, which would read as removals. It is forgiving
// where the feed reader is (undeclared entities, bare ampersands and
// angle brackets in text) and forgives HTML void elements left open in
// unescaped descriptions (<br>, <img>). It only looks at markup, so it
// costs a fraction of the parse.
func scanXMLFeed(body []byte) (feedShape, error) {
	var shape feedShape
	var stack []string
	entry := -1 // index in titleTypes of the entry being read
	entryDepth := 0
	titleAt := 0 // depth of the entry's open <title>, 0 when none
	roots := 0
	fail := func(at int, format string, args ...any) (feedShape, error) {
		line := 1 + bytes.Count(body[:min(at, len(body))], []byte("\n"))
		return shape, watch.Errorf(watch.Schema, "not a readable feed: malformed XML at line %d: "+format, append([]any{line}, args...)...)
	}
	skipTo := func(from int, end string) int {
		if k := bytes.Index(body[from:], []byte(end)); k >= 0 {
			return from + k + len(end)
		}
		return -1
	}
	i := 0
	for {
		k := bytes.IndexByte(body[i:], '<')
		if k < 0 {
			break
		}
		at := i + k
		rest := body[at:]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			if i = skipTo(at+4, "-->"); i < 0 {
				return fail(at, "unclosed comment")
			}
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			if i = skipTo(at+9, "]]>"); i < 0 {
				return fail(at, "unclosed CDATA section")
			}
		case bytes.HasPrefix(rest, []byte("<?")):
			if i = skipTo(at+2, "?>"); i < 0 {
				return fail(at, "unclosed processing instruction")
			}
		case bytes.HasPrefix(rest, []byte("<!")):
			// A DOCTYPE, possibly with an internal subset in brackets.
			gt := bytes.IndexByte(rest, '>')
			if br := bytes.IndexByte(rest, '['); br >= 0 && (gt < 0 || br < gt) {
				i = skipTo(at+br, "]")
				if i >= 0 {
					i = skipTo(i, ">")
				}
			} else if gt >= 0 {
				i = at + gt + 1
			} else {
				i = -1
			}
			if i < 0 {
				return fail(at, "unclosed declaration")
			}
		case len(rest) > 1 && rest[1] == '/':
			n := nameEnd(rest, 2)
			name := string(rest[2:n])
			gt := bytes.IndexByte(rest[n:], '>')
			if name == "" || gt < 0 {
				return fail(at, "broken end tag")
			}
			i = at + n + gt + 1
			for len(stack) > 0 && stack[len(stack)-1] != name && voidHTML[strings.ToLower(stack[len(stack)-1])] {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 || stack[len(stack)-1] != name {
				open := "nothing"
				if len(stack) > 0 {
					open = "<" + stack[len(stack)-1] + ">"
				}
				return fail(at, "</%s> closes %s", name, open)
			}
			stack = stack[:len(stack)-1]
			if len(stack) < titleAt {
				titleAt = 0
			}
			if entry >= 0 && len(stack) < entryDepth {
				entry = -1
			}
		case len(rest) > 1 && isNameStart(rest[1]):
			n := nameEnd(rest, 1)
			name := string(rest[1:n])
			// Attributes run to the first '>' outside quotes.
			j, quote := n, byte(0)
			for ; j < len(rest); j++ {
				c := rest[j]
				if quote != 0 {
					if c == quote {
						quote = 0
					}
					continue
				}
				if c == '"' || c == '\'' {
					quote = c
				} else if c == '>' {
					break
				}
			}
			if j >= len(rest) {
				return fail(at, "the document ends inside <%s> (truncated?)", name)
			}
			attrs := rest[n:j]
			selfClosing := bytes.HasSuffix(bytes.TrimRight(attrs, " \t\r\n"), []byte("/"))
			i = at + j + 1
			if len(stack) == 0 {
				roots++
			}
			local := strings.ToLower(name[strings.LastIndexByte(name, ':')+1:])
			depth := len(stack) + 1
			switch {
			case (local == "entry" || local == "item") && entry < 0 && !selfClosing:
				shape.titleTypes = append(shape.titleTypes, "")
				entry, entryDepth = len(shape.titleTypes)-1, depth
			case local == "title" && entry >= 0 && depth == entryDepth+1:
				shape.titleTypes[entry] = strings.ToLower(attrValue(attrs, "type"))
				if !selfClosing {
					titleAt = depth
				}
			case titleAt > 0 && depth > titleAt && shape.titleTypes[entry] == "":
				// Elements inside an untyped title (Atom 0.3's mode="xml"):
				// the title is markup.
				shape.titleTypes[entry] = "xhtml"
			}
			if !selfClosing {
				stack = append(stack, name)
			}
		default:
			i = at + 1 // a bare '<' in text
		}
	}
	switch {
	case roots == 0:
		return shape, watch.Errorf(watch.Schema, "not a readable feed: no root element")
	case len(stack) > 0:
		return shape, watch.Errorf(watch.Schema, "not a readable feed: the document ends inside <%s> (truncated?)", stack[len(stack)-1])
	}
	return shape, nil
}

func isNameStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// nameEnd is the end of the XML name starting at b[from].
func nameEnd(b []byte, from int) int {
	j := from
	for j < len(b) {
		c := b[j]
		if isNameStart(c) || c == '-' || c == '.' || c >= '0' && c <= '9' {
			j++
			continue
		}
		break
	}
	return j
}

// attrValue finds name="value" (or 'value') among a tag's attributes.
func attrValue(attrs []byte, name string) string {
	for k := 0; k < len(attrs); {
		m := bytes.Index(attrs[k:], []byte(name))
		if m < 0 {
			return ""
		}
		p := k + m
		q := p + len(name)
		k = q
		if p > 0 && !(attrs[p-1] == ' ' || attrs[p-1] == '\t' || attrs[p-1] == '\n' || attrs[p-1] == '\r') {
			continue
		}
		for q < len(attrs) && (attrs[q] == ' ' || attrs[q] == '\t') {
			q++
		}
		if q >= len(attrs) || attrs[q] != '=' {
			continue
		}
		q++
		for q < len(attrs) && (attrs[q] == ' ' || attrs[q] == '\t') {
			q++
		}
		if q >= len(attrs) || attrs[q] != '"' && attrs[q] != '\'' {
			continue
		}
		if e := bytes.IndexByte(attrs[q+1:], attrs[q]); e >= 0 {
			return strings.TrimSpace(string(attrs[q+1 : q+1+e]))
		}
		return ""
	}
	return ""
}

// voidHTML are HTML elements feeds leave open inside unescaped markup.
var voidHTML = map[string]bool{"br": true, "img": true, "hr": true, "wbr": true, "input": true, "meta": true,
	"area": true, "col": true, "param": true, "source": true, "embed": true}
