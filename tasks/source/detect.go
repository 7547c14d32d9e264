package source

import (
	"bytes"
	"mime"
	"slices"
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
	for _, k := range registry {
		if k.Sniff != nil && k.Sniff(head, lower) {
			return k.Name
		}
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	mt = strings.ToLower(mt)
	for _, k := range registry {
		if slices.Contains(k.MediaTypes, mt) {
			return k.Name
		}
	}
	return ""
}
