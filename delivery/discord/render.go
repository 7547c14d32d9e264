package discord

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
)

// MaxContent is the most characters one message's content may hold.
// Length is measured on the escaped source (UTF-16 code units), never
// shorter than what Discord counts.
const MaxContent = 2000

// Marks around a link's placeholder in the plain rendering; private-use
// characters, removed from user text first, so a title cannot forge one.
const (
	markOpen  = "\uE000"
	markClose = "\uE001"
)

var (
	unmarker = strings.NewReplacer(markOpen, "", markClose, "")
	// bareURL is a URL in free text: Discord links it as it stands, so it
	// is kept as written (a backslash inside would break it).
	bareURL = regexp.MustCompile(`https?://[^\s<>()\[\]]+`)
	// listNumber is a line start Discord would take for a numbered list.
	listNumber = regexp.MustCompile(`^(\s*[0-9]+)\.`)
)

// special are the characters Discord's markdown gives a meaning: emphasis,
// strike, code, spoilers, quotes, headings, lists, links, mentions
// (<@id>, <#id>, <t:…>, @everyone).
const special = "\\*_~`|[]()<>#-+@"

// Escape escapes s for Discord's markdown: each character it gives a
// meaning is preceded by a backslash, which shows it as itself, so a title
// can never become markup, a link or a mention. URLs in s stay as they
// are, and still link.
func Escape(s string) string {
	var b strings.Builder
	for {
		loc := bareURL.FindStringIndex(s)
		if loc == nil {
			escapeTo(&b, s)
			break
		}
		escapeTo(&b, s[:loc[0]])
		b.WriteString(s[loc[0]:loc[1]])
		s = s[loc[1]:]
	}
	return listNumber.ReplaceAllString(b.String(), `$1\.`)
}

func escapeTo(b *strings.Builder, s string) {
	for _, r := range s {
		if strings.ContainsRune(special, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// line is one rendered line: its mrkdwn, and the same content without
// links for the rare line too long to fit a message on its own.
type line struct{ markup, plain string }

type link struct{ url, title string }

// Render renders m as Discord markdown, split into parts of at most
// MaxContent. The headline is bold; each item's title links to its URL as
// [title](url), the title escaped. Parts break between lines; a line
// longer than the limit is cut, link-free, between characters and never
// between a backslash and the character it escapes.
func Render(m delivery.Message, lang string, zone *time.Location, now time.Time) []string {
	return pack(lines(m, lang, zone, now), MaxContent)
}

func lines(m delivery.Message, lang string, zone *time.Location, now time.Time) []line {
	head := Escape(oneLine(render.Title(m, lang, now)))
	out := []line{{"**" + head + "**", head}}

	// The items' titles become placeholders for their links; the rest is
	// rendered in the recipient's language, then escaped line by line.
	m.Title, m.Text, m.TaskName, m.TaskID = unmarker.Replace(m.Title), unmarker.Replace(m.Text), unmarker.Replace(m.TaskName), unmarker.Replace(m.TaskID)
	items := make([]delivery.Item, len(m.Items))
	var links []link
	for i, it := range m.Items {
		it.ID, it.Title, it.WasTitle = unmarker.Replace(it.ID), unmarker.Replace(it.Title), unmarker.Replace(it.WasTitle)
		if linkable(it.URL) {
			t := oneLine(it.Title)
			if t == "" {
				t = oneLine(it.ID)
			}
			if oneLine(it.WasTitle) == t {
				it.WasTitle = ""
			}
			it.Title = markOpen + strconv.Itoa(len(links)) + markClose
			links = append(links, link{it.URL, t})
			it.URL = ""
		}
		items[i] = it
	}
	m.Items = items
	body := strings.Split(strings.TrimRight(render.Text(m, lang, zone, now), "\n"), "\n")[1:]
	for _, l := range body {
		e := Escape(strings.TrimRight(l, " \t\r"))
		out = append(out, line{
			markup: expand(e, links, func(k link) string { return "[" + Escape(k.title) + "](" + k.url + ")" }),
			plain:  expand(e, links, func(k link) string { return Escape(k.title) }),
		})
	}
	for i := range out {
		out[i].markup = strings.ToValidUTF8(out[i].markup, "\uFFFD")
		out[i].plain = strings.ToValidUTF8(out[i].plain, "\uFFFD")
	}
	return out
}

// expand replaces each placeholder in s by its link as show renders it.
func expand(s string, links []link, show func(link) string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, markOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+len(markOpen):]
		j := strings.Index(rest, markClose)
		n, err := strconv.Atoi(rest[:max(j, 0)])
		if j < 0 || err != nil || n < 0 || n >= len(links) {
			s = rest
			continue
		}
		b.WriteString(show(links[n]))
		s = rest[j+len(markClose):]
	}
}

// linkable reports whether u is an absolute http(s) URL that can stand
// in a link: none of the characters that end a link's target.
func linkable(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != "" && !strings.ContainsAny(u, " \t\r\n()<>[]")
}

// oneLine folds line breaks and runs of spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// pack joins lines with "\n" into parts of at most limit characters (as
// render.Length counts). A line too long for any part is cut, link-free,
// across as many parts as it needs, starting in the room left in the
// current one.
func pack(lines []line, limit int) []string {
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
		ln := render.Length(l.markup)
		if ln > limit {
			rest := l.plain
			if room := limit - n - sep; room > 0 {
				if head := rest[:cut(rest, room)]; head != "" {
					if sep > 0 {
						cur.WriteString("\n")
					}
					cur.WriteString(head)
					rest = rest[len(head):]
				}
			}
			for rest != "" {
				flush()
				head := rest[:cut(rest, limit)]
				if head == "" {
					return []string{""}
				}
				cur.WriteString(head)
				n = render.Length(head)
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
// valid UTF-8) that fits in limit characters without parting a backslash
// from the character it escapes.
func cut(s string, limit int) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		unit := s[i : i+size]
		if r == '\\' && i+size < len(s) {
			_, next := utf8.DecodeRuneInString(s[i+size:])
			unit = s[i : i+size+next]
		}
		w := render.Length(unit)
		if n+w > limit {
			return i
		}
		n += w
		i += len(unit)
	}
	return len(s)
}
