package discord

import (
	"regexp"
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

var (
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

// style is Discord's markdown for render.Chat: a link's target may hold
// none of the characters that end it.
var style = render.ChatStyle{
	Limit:    MaxContent,
	Escape:   Escape,
	Bold:     func(head string) string { return "**" + head + "**" },
	Link:     func(url, title string) string { return "[" + Escape(title) + "](" + url + ")" },
	URLStops: "()<>[]",
	Unit:     escaped,
}

// Render renders m as Discord markdown, split into parts of at most
// MaxContent. The headline is bold; each item's title links to its URL as
// [title](url), the title escaped. Parts break between lines; a line
// longer than the limit is cut, link-free, between characters and never
// between a backslash and the character it escapes.
func Render(m delivery.Message, lang string, zone *time.Location, now time.Time) []string {
	return render.Chat(m, lang, zone, now, style)
}

// escaped is the byte length of a backslash and the character it escapes
// when s starts with one, which a cut may not part; 0 otherwise.
func escaped(s string) int {
	r, size := utf8.DecodeRuneInString(s)
	if r == '\\' && size < len(s) {
		_, next := utf8.DecodeRuneInString(s[size:])
		return size + next
	}
	return 0
}
