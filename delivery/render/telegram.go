package render

import (
	"net/url"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
)

// TelegramLimit is the most characters one Telegram message may hold.
// Telegram counts UTF-16 code units, and so does Length.
const TelegramLimit = 4096

// Length is the length of s as Telegram counts it (UTF-16 code units).
// It is measured on the HTML source, which is never shorter than the text
// Telegram is left with after parsing entities.
func Length(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
		if r == utf8.RuneError {
			n++ // the replacement may count wider than the byte
		}
	}
	return n
}

var htmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

var htmlAttr = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// EscapeHTML escapes s for Telegram's HTML parse mode (text content).
func EscapeHTML(s string) string { return htmlText.Replace(s) }

// htmlLine is one rendered line: its markup, and the same content without
// tags for the rare line too long to fit a part on its own.
type htmlLine struct {
	html  string
	plain string // escaped, tag-free
}

// TelegramHTML renders m for Telegram's HTML parse mode, split into parts
// of at most TelegramLimit characters. Parts break on line boundaries; a
// single line longer than the limit is cut outside any tag or entity.
func TelegramHTML(m delivery.Message, lang string, zone *time.Location, now time.Time) []string {
	v := prepare(m, lang, zone, now)
	var lines []htmlLine
	add := func(html, plain string) { lines = append(lines, htmlLine{html, plain}) }
	t := EscapeHTML(v.title)
	add("<b>"+t+"</b>", t)
	if v.text != "" {
		add("", "")
		for _, l := range strings.Split(v.text, "\n") {
			e := EscapeHTML(strings.TrimRight(l, " \t\r"))
			add(e, e)
		}
	}
	if len(v.items) > 0 {
		add("", "")
	}
	for _, it := range v.items {
		var h, p strings.Builder
		h.WriteString("• ")
		p.WriteString("• ")
		if it.change != "" {
			c := "[" + EscapeHTML(it.change) + "]"
			h.WriteString("<i>" + c + "</i> ")
			p.WriteString(c + " ")
		}
		title := EscapeHTML(it.title)
		if safeLink(it.url) {
			h.WriteString(`<a href="` + htmlAttr.Replace(it.url) + `">` + title + "</a>")
		} else {
			h.WriteString(title)
		}
		p.WriteString(title)
		if it.was != "" {
			was := EscapeHTML(it.was)
			h.WriteString(was)
			p.WriteString(was)
		}
		if it.due != "" {
			d := EscapeHTML(v.w.separator + it.due)
			h.WriteString(d)
			p.WriteString(d)
		}
		add(h.String(), p.String())
		for _, l := range it.under() {
			e := "  " + EscapeHTML(l)
			add(e, e)
		}
	}
	if v.more > 0 {
		e := EscapeHTML(v.w.more(v.more))
		add("<i>"+e+"</i>", e)
	}
	for _, l := range v.machine {
		add("", "")
		for _, s := range strings.Split(l, "\n") {
			e := EscapeHTML(s)
			add(e, e)
		}
	}
	return pack(lines, TelegramLimit)
}

// safeLink reports whether u is an absolute http(s) URL worth linking.
func safeLink(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != ""
}

// pack joins lines with "\n" into parts of at most limit characters. A
// line too long for any part is cut, tag-free, across as many parts as it
// needs, starting in the room left in the current one.
func pack(lines []htmlLine, limit int) []string {
	ls := make([]line, len(lines))
	for i, l := range lines {
		ls[i] = line{l.html, l.plain}
	}
	return packer{limit: limit, brk: "\n", size: Length, cut: cut}.pack(ls)
}

// cut returns the byte length of the longest prefix of s, escaped and
// tag-free, that fits in limit characters (as Length counts) without
// ending inside an entity ("&amp;"). It makes progress whenever limit
// allows at least one character.
func cut(s string, limit int) int {
	n := 0
	for i, r := range s {
		w := Length(string(r))
		if n+w > limit {
			if amp := strings.LastIndexByte(s[:i], '&'); amp > 0 && !strings.Contains(s[amp:i], ";") {
				return amp
			}
			return i
		}
		n += w
	}
	return len(s)
}
