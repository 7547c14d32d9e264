package slack

import (
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
)

// MaxText is the most characters one message's text may hold: Slack
// truncates text above 40,000 characters. Length is measured on the
// escaped source (UTF-16 code units), never shorter than what Slack shows.
const MaxText = 40000

var (
	escaper   = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	urlQuoter = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C")
)

// Escape escapes s for Slack's mrkdwn text: only &, < and > are control
// characters there, and as entities they show as themselves, so a title
// can never open a link, a mention (<!channel>) or markup.
func Escape(s string) string { return escaper.Replace(s) }

// style is Slack's mrkdwn for render.Chat.
var style = render.ChatStyle{
	Limit:  MaxText,
	Escape: Escape,
	Bold:   func(head string) string { return "*" + head + "*" },
	Link:   func(url, title string) string { return "<" + urlQuoter.Replace(url) + "|" + Escape(title) + ">" },
	Unit:   entity,
}

// Render renders m as Slack mrkdwn, split into parts of at most MaxText.
// The headline is bold; each item's title links to its URL as
// <url|title>, the title escaped. Parts break between lines; a line
// longer than the limit is cut, link-free, between characters and never
// inside an entity.
func Render(m delivery.Message, lang string, zone *time.Location, now time.Time) []string {
	return render.Chat(m, lang, zone, now, style)
}

// entity is the byte length of the entity ("&amp;") s starts with, which
// a cut may not part; 0 when s starts with none.
func entity(s string) int {
	if j := strings.IndexByte(s, ';'); s != "" && s[0] == '&' && j > 0 && j <= 4 { // &lt; &gt; &amp;
		return j + 1
	}
	return 0
}
