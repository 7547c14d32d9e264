package source

import (
	"bytes"
	"mime"
	"strings"
)

// Detect tells the kind of a document when the spec leaves it empty. The
// content decides first (servers often label feeds text/html or
// text/plain); the Content-Type breaks ties. "" means unknown.
func Detect(contentType string, body []byte) string {
	head := body
	if len(head) > 4096 {
		head = head[:4096]
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	lower := bytes.ToLower(head)
	switch {
	case bytes.HasPrefix(lower, []byte("begin:vcalendar")):
		return KindICal
	case bytes.HasPrefix(head, []byte("{")):
		if bytes.Contains(lower, []byte("jsonfeed.org/version")) {
			return KindRSS
		}
		return KindJSON
	case bytes.HasPrefix(head, []byte("[")):
		return KindJSON
	case bytes.HasPrefix(head, []byte("<")):
		for _, tag := range []string{"<rss", "<feed", "<rdf:rdf"} {
			if bytes.Contains(lower, []byte(tag)) {
				return KindRSS
			}
		}
		if bytes.Contains(lower, []byte("<html")) || bytes.HasPrefix(lower, []byte("<!doctype html")) {
			return KindHTML
		}
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch strings.ToLower(mt) {
	case "text/calendar":
		return KindICal
	case "application/rss+xml", "application/atom+xml", "application/feed+json", "application/rdf+xml":
		return KindRSS
	case "application/json":
		return KindJSON
	case "text/html", "application/xhtml+xml":
		return KindHTML
	}
	return ""
}
