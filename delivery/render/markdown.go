package render

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
)

// MarkdownStyle is how a group robot's markdown is measured and broken
// into lines (WeCom, DingTalk).
type MarkdownStyle struct {
	// Limit is the most one part may hold, as Size measures it.
	Limit int
	// Size measures text the way the platform's limit counts it; nil
	// counts UTF-8 bytes. It must add up: Size(a+b) == Size(a)+Size(b).
	Size func(string) int
	// Break ends a line ("\n"; DingTalk wants "  \n").
	Break string
}

func (st MarkdownStyle) size(s string) int {
	if st.Size == nil {
		return len(s)
	}
	return st.Size(s)
}

// Markdown renders m as robot markdown, split into parts of at most
// st.Limit. Parts break between lines; a line longer than the limit is
// cut, markup-free, between characters (never inside one), so every part
// is valid UTF-8. A list item links its title when both title and URL can
// stand in a link, else it shows the URL after the title.
func Markdown(m delivery.Message, lang string, zone *time.Location, now time.Time, st MarkdownStyle) []string {
	v := prepare(m, lang, zone, now)
	var lines []line
	add := func(md, plain string) {
		// Invalid bytes go as U+FFFD, so a cut always falls between characters.
		lines = append(lines, line{strings.ToValidUTF8(md, "\uFFFD"), strings.ToValidUTF8(plain, "\uFFFD")})
	}
	add("**"+v.title+"**", v.title)
	if v.text != "" {
		add("", "")
		for _, l := range strings.Split(v.text, "\n") {
			l = strings.TrimRight(l, " \t\r")
			add(l, l)
		}
	}
	if len(v.items) > 0 {
		add("", "")
	}
	for _, it := range v.items {
		head := "- "
		if it.change != "" {
			head += "[" + it.change + "] "
		}
		tail := it.was
		if it.due != "" {
			tail += v.w.separator + it.due
		}
		plain := head + it.title + tail
		if it.url != "" {
			plain += " " + it.url
		}
		switch {
		case it.url != "" && linkable(it.title, it.url):
			add(head+"["+it.title+"]("+it.url+")"+tail, plain)
		default:
			add(plain, plain)
		}
		for _, l := range it.under() {
			l = "  " + unlisted(l)
			add(l, l)
		}
	}
	if v.more > 0 {
		add(v.w.more(v.more), v.w.more(v.more))
	}
	for _, l := range v.machine {
		add("", "")
		for _, s := range strings.Split(l, "\n") {
			add(s, s) // as the message's text is
		}
	}
	cut := func(s string, limit int) int { return cutSize(s, limit, st) }
	return packer{limit: st.Limit, brk: st.Break, size: st.size, cut: cut}.pack(lines)
}

// unlisted keeps a line's sign ("+ ", "- ": a changed line, or a summary
// that starts so) from reading as a list item under the item's own: a
// full-width plus or minus instead.
func unlisted(l string) string {
	if rest, ok := strings.CutPrefix(l, "+ "); ok {
		return "＋ " + rest
	}
	if rest, ok := strings.CutPrefix(l, "- "); ok {
		return "－ " + rest
	}
	return l
}

// linkable reports whether [title](url) reads as one link: an absolute
// http(s) URL without the characters that end a link target, and a title
// without brackets.
func linkable(title, url string) bool {
	return safeLink(url) && !strings.ContainsAny(url, "() \t<>") && !strings.ContainsAny(title, "[]")
}

// cutSize returns the byte length of the longest prefix of s (valid
// UTF-8) that fits in limit as st measures it, ending between characters.
func cutSize(s string, limit int, st MarkdownStyle) int {
	n := 0
	for i, r := range s {
		w := st.size(s[i : i+utf8.RuneLen(r)])
		if n+w > limit {
			return i
		}
		n += w
	}
	return len(s)
}
