package render

import (
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
)

// ChatStyle is how a chat webhook's markup (Slack mrkdwn, Discord
// markdown) escapes text, bolds the headline, shows a link and may be cut.
// Each sink keeps its own rules; Chat is the rendering they share.
type ChatStyle struct {
	// Limit is the most characters one part may hold, as Length counts.
	Limit int
	// Escape escapes text so that it shows as itself.
	Escape func(string) string
	// Bold marks the escaped headline.
	Bold func(head string) string
	// Link shows title (not escaped) linking to url.
	Link func(url, title string) string
	// URLStops are the characters, besides white space, a URL may not hold
	// to stand in a link.
	URLStops string
	// Unit is the byte length of the piece at the start of s (escaped,
	// valid UTF-8) a cut may not part; nil: one character.
	Unit func(s string) int
}

// Marks around a link's placeholder in the plain rendering; private-use
// characters, removed from user text first, so a title cannot forge one.
const (
	chatMarkOpen  = "\uE000"
	chatMarkClose = "\uE001"
)

var chatUnmarker = strings.NewReplacer(chatMarkOpen, "", chatMarkClose, "")

type chatLink struct{ url, title string }

// Chat renders m in st's markup, split into parts of at most st.Limit.
// The headline is bold; each item's title links to its URL, the title
// escaped. Parts break between lines; a line longer than the limit is
// cut, link-free, between characters and never inside a unit st.Unit
// names.
func Chat(m delivery.Message, lang string, zone *time.Location, now time.Time, st ChatStyle) []string {
	return st.pack(st.lines(m, lang, zone, now))
}

func (st ChatStyle) lines(m delivery.Message, lang string, zone *time.Location, now time.Time) []line {
	head := st.Escape(oneLine(Title(m, lang, now)))
	out := []line{{st.Bold(head), head}}

	// The items' titles become placeholders for their links; the rest is
	// rendered in the recipient's language, then escaped line by line.
	m.Title, m.Text, m.TaskName, m.TaskID = chatUnmarker.Replace(m.Title), chatUnmarker.Replace(m.Text), chatUnmarker.Replace(m.TaskName), chatUnmarker.Replace(m.TaskID)
	items := make([]delivery.Item, len(m.Items))
	var links []chatLink
	for i, it := range m.Items {
		it.ID, it.Title, it.WasTitle = chatUnmarker.Replace(it.ID), chatUnmarker.Replace(it.Title), chatUnmarker.Replace(it.WasTitle)
		if st.linkable(it.URL) {
			t := oneLine(it.Title)
			if t == "" {
				t = oneLine(it.ID)
			}
			if oneLine(it.WasTitle) == t {
				it.WasTitle = ""
			}
			it.Title = chatMarkOpen + strconv.Itoa(len(links)) + chatMarkClose
			links = append(links, chatLink{it.URL, t})
			it.URL = ""
		}
		items[i] = it
	}
	m.Items = items
	body := strings.Split(strings.TrimRight(Text(m, lang, zone, now), "\n"), "\n")[1:]
	for _, l := range body {
		e := st.Escape(strings.TrimRight(l, " \t\r"))
		out = append(out, line{
			markup: chatExpand(e, links, func(k chatLink) string { return st.Link(k.url, k.title) }),
			plain:  chatExpand(e, links, func(k chatLink) string { return st.Escape(k.title) }),
		})
	}
	for i := range out {
		out[i].markup = strings.ToValidUTF8(out[i].markup, "\uFFFD")
		out[i].plain = strings.ToValidUTF8(out[i].plain, "\uFFFD")
	}
	return out
}

// chatExpand replaces each placeholder in s by its link as show renders it.
func chatExpand(s string, links []chatLink, show func(chatLink) string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, chatMarkOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+len(chatMarkOpen):]
		j := strings.Index(rest, chatMarkClose)
		n, err := strconv.Atoi(rest[:max(j, 0)])
		if j < 0 || err != nil || n < 0 || n >= len(links) {
			s = rest
			continue
		}
		b.WriteString(show(links[n]))
		s = rest[j+len(chatMarkClose):]
	}
}

// linkable reports whether u is an absolute http(s) URL that can stand
// in a link.
func (st ChatStyle) linkable(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != "" && !strings.ContainsAny(u, " \t\r\n"+st.URLStops)
}

// pack joins lines with "\n" into parts of at most st.Limit characters
// (as Length counts). A line too long for any part is cut, link-free,
// across as many parts as it needs, starting in the room left in the
// current one.
func (st ChatStyle) pack(lines []line) []string {
	limit := st.Limit
	var parts []string
	var cur strings.Builder
	n := 0
	flush := func() {
		if s := strings.TrimRight(cur.String(), "\n"); s != "" {
			parts = append(parts, s)
		}
		cur.Reset()
		n = 0
	}
	for _, l := range lines {
		sep := 0
		if n > 0 {
			sep = 1
		}
		ln := Length(l.markup)
		if ln > limit {
			rest := l.plain
			if room := limit - n - sep; room > 0 {
				if head := rest[:st.cut(rest, room)]; head != "" {
					if sep > 0 {
						cur.WriteString("\n")
					}
					cur.WriteString(head)
					n += sep + Length(head)
					rest = rest[len(head):]
				}
			}
			for rest != "" {
				flush()
				head := rest[:st.cut(rest, limit)]
				if head == "" {
					return []string{""}
				}
				cur.WriteString(head)
				n = Length(head)
				rest = rest[len(head):]
			}
			continue
		}
		if n+sep+ln > limit {
			flush()
			sep = 0
		}
		if sep > 0 {
			cur.WriteString("\n")
		}
		cur.WriteString(l.markup)
		n += sep + ln
	}
	flush()
	if len(parts) == 0 {
		return []string{""}
	}
	return parts
}

// cut returns the byte length of the longest prefix of s (escaped,
// valid UTF-8) that fits in limit characters without parting a unit.
func (st ChatStyle) cut(s string, limit int) int {
	n := 0
	for i := 0; i < len(s); {
		size := 0
		if st.Unit != nil {
			size = st.Unit(s[i:])
		}
		if size <= 0 {
			_, size = utf8.DecodeRuneInString(s[i:])
		}
		unit := s[i : i+size]
		w := Length(unit)
		if n+w > limit {
			return i
		}
		n += w
		i += len(unit)
	}
	return len(s)
}
