package conversation

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/herald-bridge/herald/tasks/source"
)

// actionFeed is the button of one offered feed; its argument is the
// offer's token and the feed's number ("d-…:2").
const actionFeed = "feed"

// feedOffer offers the feeds a page advertises, or the RSSHub routes its
// instance's Radar has for it, and watches the one chosen instead of the
// page (SPEC §18): by button in Telegram and Feishu, by number anywhere.
type feedOffer struct{ t *turn }

func (fo feedOffer) offer(cmd Command, feeds []source.Feed) []Reply {
	t := fo.t
	token, err := draftToken()
	if err != nil {
		return t.failed(err)
	}
	d := dialog{Ask: "feed", Command: cmd.Name, URL: cmd.URL, Name: cmd.TaskName, Before: cmd.Before,
		Schedule: cmd.Schedule, Token: token, Feeds: feeds}
	if err := (dialogs{t}).saveDialog(d); err != nil {
		return t.failed(err)
	}
	key := "discover.feeds"
	if source.IsRoute(feeds[0].URL) {
		key = "discover.routes"
	}
	var b strings.Builder
	b.WriteString(t.tr(key))
	r := Reply{}
	for i, f := range feeds {
		label := f.Title
		if label == "" {
			label = t.tr("discover.untitled")
		}
		fmt.Fprintf(&b, "%d. %s — %s\n", i+1, label, source.Shown(specOf(fo.spec(f))))
		if t.m.Channel != "console" { // the console has no buttons; its people answer in words
			r.Buttons = append(r.Buttons, Button{Label: strconv.Itoa(i+1) + ". " + clipLabel(label), Action: actionFeed, Arg: token + ":" + strconv.Itoa(i+1)})
		}
	}
	b.WriteString(t.tr("discover.answer", len(feeds), ShowURL(cmd.URL)))
	r.Text = b.String()
	return []Reply{r}
}

// spec is the watch of an offered feed.
func (fo feedOffer) spec(f source.Feed) Command {
	if source.IsRoute(f.URL) {
		return Command{URL: f.URL, Kind: source.KindRSSHub}
	}
	return Command{URL: f.URL, Kind: source.KindRSS}
}

// answer takes a typed number; anything else asks again.
func (fo feedOffer) answer(d dialog, text string) []Reply {
	n, err := strconv.Atoi(strings.Trim(narrowDigits(text), answerEnds))
	if err != nil || n < 1 || n > len(d.Feeds) {
		if serr := (dialogs{fo.t}).saveDialog(d); serr != nil {
			return fo.t.failed(serr)
		}
		return fo.t.reply("discover.pick_a_number", len(d.Feeds))
	}
	dialogs{fo.t}.clearDialog()
	return fo.choose(d, n)
}

// press takes a pressed feed button while its offer is pending.
func (fo feedOffer) press(p Press) []Reply {
	token, num, _ := strings.Cut(p.Arg, ":")
	d, ok := dialogs{fo.t}.dialog()
	n, err := strconv.Atoi(num)
	if !ok || d.Ask != "feed" || d.Token == "" || d.Token != token || err != nil || n < 1 || n > len(d.Feeds) {
		return []Reply{{Toast: fo.t.tr("button.no_longer_valid")}}
	}
	dialogs{fo.t}.clearDialog()
	out := fo.choose(d, n)
	if len(out) > 0 {
		out[0].Edit = true
	}
	return out
}

// choose requests the n-th offered feed, with the schedule, name and
// reminders the page's request gave.
func (fo feedOffer) choose(d dialog, n int) []Reply {
	cmd := fo.spec(d.Feeds[n-1])
	cmd.Name, cmd.TaskName, cmd.Before, cmd.Schedule, cmd.Addressed = d.Command, d.Name, d.Before, d.Schedule, true
	return fo.t.request(cmd)
}

// clipLabel keeps a button's label short.
func clipLabel(s string) string {
	if r := []rune(s); len(r) > 28 {
		return string(r[:28]) + "…"
	}
	return s
}

// narrowDigits writes full-width digits ("２") as ASCII ones.
func narrowDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '０' && r <= '９' {
			return '0' + (r - '０')
		}
		return r
	}, strings.TrimSpace(s))
}
