package source

import (
	"bytes"
	"mime"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// The byte-order marks a document may start with, longest first (the
// UTF-32 LE mark begins with the UTF-16 LE one).
var boms = []struct {
	mark []byte
	enc  encoding.Encoding
}{
	{[]byte{0x00, 0x00, 0xfe, 0xff}, utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)},
	{[]byte{0xff, 0xfe, 0x00, 0x00}, utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM)},
	{[]byte{0xef, 0xbb, 0xbf}, unicode.UTF8},
	{[]byte{0xfe, 0xff}, unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)},
	{[]byte{0xff, 0xfe}, unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)},
}

// xmlDecl matches the encoding pseudo-attribute of an XML declaration.
var xmlDecl = regexp.MustCompile(`^(\s*<\?xml[^>]*?\sencoding\s*=\s*)["']([A-Za-z0-9._:-]+)["']`)

// toUTF8 converts a document to UTF-8 following RFC 7303: the charset of
// the Content-Type wins, then a byte-order mark, then (for XML) the
// encoding of the XML declaration; with none of them the bytes are UTF-8
// when they are valid UTF-8, else Windows-1252 (the usual encoding of
// undeclared Western pages). A declared charset the bytes cannot be (a
// "utf-8" label over bytes that are not UTF-8) gives way to the next
// source. The BOM is dropped and an XML declaration is rewritten to say
// UTF-8, so no later reader converts the text a second time.
func toUTF8(body []byte, contentType string, isXML bool) []byte {
	enc, skip := pickEncoding(body, contentType, isXML)
	body = body[skip:]
	if enc != nil && enc != unicode.UTF8 {
		if out, err := enc.NewDecoder().Bytes(body); err == nil {
			body = out
		}
	}
	if !utf8.Valid(body) {
		body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	if isXML {
		// Control characters other than tab and line ends are not allowed
		// anywhere in XML 1.0; feeds carry them as noise.
		if bytes.ContainsFunc(body, isXMLControl) {
			body = bytes.Map(func(r rune) rune {
				if isXMLControl(r) {
					return -1
				}
				return r
			}, body)
		}
		if m := xmlDecl.FindSubmatchIndex(body); m != nil {
			fixed := make([]byte, 0, len(body))
			fixed = append(fixed, body[:m[4]]...)
			fixed = append(fixed, "UTF-8"...)
			fixed = append(fixed, body[m[5]:]...)
			body = fixed
		}
	}
	return body
}

// pickEncoding decides the document's encoding; skip is the length of a
// byte-order mark to drop.
func pickEncoding(body []byte, contentType string, isXML bool) (enc encoding.Encoding, skip int) {
	var bom encoding.Encoding
	for _, b := range boms {
		if bytes.HasPrefix(body, b.mark) {
			bom, skip = b.enc, len(b.mark)
			break
		}
	}
	rest := body[skip:]
	fits := func(e encoding.Encoding) bool {
		return e != unicode.UTF8 || utf8.Valid(rest)
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if e := lookupCharset(params["charset"]); e != nil {
			// A UTF-16 or UTF-32 BOM contradicting a single-byte label is
			// the truth about the bytes.
			if bom == nil || bom == unicode.UTF8 {
				if fits(e) {
					return e, skip
				}
			}
		}
	}
	if bom != nil {
		return bom, skip
	}
	if isXML {
		if wide := sniffWide(rest); wide != nil {
			return wide, 0
		}
		if m := xmlDecl.FindSubmatch(rest); m != nil {
			if e := lookupCharset(string(m[2])); e != nil && fits(e) {
				return e, 0
			}
		}
	}
	if utf8.Valid(rest) {
		return unicode.UTF8, skip
	}
	return charmap.Windows1252, skip
}

// sniffWide recognises UTF-16 and UTF-32 without a BOM by the "<" that
// starts the document (XML 1.0, Appendix F).
func sniffWide(b []byte) encoding.Encoding {
	switch {
	case bytes.HasPrefix(b, []byte{0x00, 0x00, 0x00, '<'}):
		return utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)
	case bytes.HasPrefix(b, []byte{'<', 0x00, 0x00, 0x00}):
		return utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM)
	case bytes.HasPrefix(b, []byte{0x00, '<', 0x00, '?'}):
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	case bytes.HasPrefix(b, []byte{'<', 0x00, '?', 0x00}):
		return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	}
	return nil
}

// lookupCharset maps a charset label to an encoding: the WHATWG labels
// (so "iso-8859-1" reads as Windows-1252, as browsers do), plus UTF-32.
// nil means unknown.
func lookupCharset(label string) encoding.Encoding {
	label = strings.ToLower(strings.Trim(strings.TrimSpace(label), `"'`))
	switch label {
	case "":
		return nil
	case "utf-32", "utf-32be":
		return utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)
	case "utf-32le":
		return utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM)
	case "utf-16":
		// Without a BOM, UTF-16 is big-endian (RFC 2781).
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	}
	e, err := htmlindex.Get(label)
	if err != nil || e == encoding.Replacement {
		return nil
	}
	return e
}

func isXMLControl(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' && r != '\r'
}
