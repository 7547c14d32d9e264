// Package render turns one neutral delivery.Message into the text each
// channel sends: plain text, Telegram HTML parts and Feishu interactive
// cards, in English or Chinese, with times in the recipient's zone.
package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
)

// Languages a message can be rendered in. Anything else renders in English.
const (
	LangEN = "en"
	LangZH = "zh"
)

// words is the phrasebook of one language.
type words struct {
	changes   func(n int, task string) string
	dueIn     func(left string, title string) string
	overdue   func(title string) string
	more      func(n int) string
	due       string // "due"
	left      func(left string) string
	ago       func(ago string) string
	open      string
	change    map[string]string
	fallback  string
	dateFmt   string
	minute    func(n int) string
	hour      func(n int) string
	day       func(n int) string
	separator string
	was       func(title string) string    // a changed item's previous title, after its title
	dueMoved  func(from, to string) string // a changed item's due time moved
	wasDue    func(from string) string     // a changed item's due time was dropped
	// inboxFullTitle and inboxFull tell an inbox's owner it is full.
	inboxFullTitle string
	inboxFull      func(limit int) string
	// notices are what herald tells a task's owner about the task, by
	// name (Notice*): a title, and a text that is a fmt format over the
	// arguments the sender gives (indexed verbs, so a language may put
	// them in its own order).
	notices map[string]notice
	// noticeOne are the formats of notices whose count (countArg) is 1,
	// in a language that words one apart ("1 item").
	noticeOne map[string]string
	// machineSummary and machineTranslation mark a model's summary and
	// translation of a notice as machine-written.
	machineSummary     func(text string) string
	machineTranslation func(text string) string
	// digest is a digest's headline over its number of items; inTask
	// names an item's task in a digest; moreInInbox says how many more
	// of its items wait in the recipient's inbox.
	digest      func(n int) string
	inTask      func(task, title string) string
	moreInInbox func(n int) string
}

type notice struct{ title, format string }

// countArg is the index of each notice's count among its arguments (an
// int, or grouped text), for notices that have one.
var countArg = map[string]int{NoticeBaseline: 1, NoticeWatchingMany: 1, NoticeFailing: 1}

// The notices herald sends a task's owner, and the arguments each one's
// format takes.
const (
	NoticeBaseline     = "baseline"      // the task's name, its number of items (int)
	NoticeWatchingMany = "watching_many" // how many sources, how many items in all (both grouped text)
	NoticeSuspect      = "suspect"       // the task's name, its id
	NoticeFailing      = "failing"       // the task's name, failures in a row (int), the failure's class
	NoticeRecovered    = "recovered"     // the task's name
	NoticeUnreachable  = "unreachable"   // the task's name, why
	NoticeDisabled     = "disabled"      // the recipient, why (SPEC §21)
)

// Notices are the names of every owner notice.
var Notices = []string{NoticeBaseline, NoticeWatchingMany, NoticeSuspect, NoticeFailing, NoticeRecovered, NoticeUnreachable, NoticeDisabled}

// OwnerNotice is the title and the text format, in lang, of the owner
// notice name (one of Notices).
func OwnerNotice(lang, name string) (title, format string) {
	n := phrasebook(lang).notices[name]
	return n.title, n.format
}

// FormatNotice is the title and text, in lang, of the owner notice name
// over args, worded for a count of one where the language says so.
func FormatNotice(lang, name string, args ...any) (title, text string) {
	n := phrasebook(lang).notices[name]
	format := n.format
	if one, ok := phrasebook(lang).noticeOne[name]; ok && countArg[name] < len(args) && fmt.Sprint(args[countArg[name]]) == "1" {
		format = one
	}
	return n.title, fmt.Sprintf(format, args...)
}

// phrasebooks are the languages a message renders in, one file each
// (en.go, zh.go); English is the fallback.
var phrasebooks = map[string]*words{LangEN: &en, LangZH: &zh}

// Speaks reports whether lang has a phrasebook of its own.
func Speaks(lang string) bool { _, ok := phrasebooks[lang]; return ok }

func phrasebook(lang string) words {
	if w, ok := phrasebooks[lang]; ok {
		return *w
	}
	return en
}

// InboxFull is the notice, in lang, that an inbox keeping limit items is
// full and its oldest unread items are leaving it.
func InboxFull(lang string, limit int) (title, text string) {
	w := phrasebook(lang)
	return w.inboxFullTitle, w.inboxFull(limit)
}

// view is a message prepared for any output: strings are still raw
// (unescaped) user text.
type view struct {
	title string
	items []itemView
	more  int
	text  string
	w     words
	// machine are the lines a model wrote about the message, each marked
	// as machine-written; they come last, so a message split in parts
	// reads the same in its earlier parts with or without them.
	machine []string
}

type itemView struct {
	change string // localised change label, may be empty
	title  string
	was    string // localised previous-title phrase (" (was: …)"), may be empty
	url    string
	due    string // localised due phrase, may be empty
	// summary is the item's own text in one line, and lines the changed
	// lines shown under it ("+ added", "- removed"); either may be empty.
	summary  string
	lines    []string
	linkOnly bool // the title is the link itself
}

// MaxDiffLines is how many of an item's changed lines a notice shows
// each way; a webhook body carries them all (at most 20 each way).
const MaxDiffLines = 5

// diffLines are an item's changed lines as a notice shows them.
func diffLines(d *delivery.ItemDiff) []string {
	if d == nil {
		return nil
	}
	var out []string
	for i, l := range d.Added {
		if i == MaxDiffLines {
			break
		}
		out = append(out, "+ "+oneLine(l))
	}
	for i, l := range d.Removed {
		if i == MaxDiffLines {
			break
		}
		out = append(out, "- "+oneLine(l))
	}
	return out
}

// under is what a notice shows under an item's title: its summary, then
// its changed lines.
func (it itemView) under() []string {
	if it.summary == "" {
		return it.lines
	}
	return append([]string{it.summary}, it.lines...)
}

// MaxWasTitle caps, in characters, the previous title a changed item
// shows; a longer one is cut and ends in "…", so the previous title can
// never make an item's line much more than its title's length again.
const MaxWasTitle = 200

// duration renders d (positive) as a person reads a clock: to the nearest
// minute under an hour, the nearest hour under a day, then days and the
// hours left over, rounded to the hour ("2 d 23 h", never "2 d" for
// 71 h 59 m).
func (w words) duration(d time.Duration) string {
	if d < time.Hour-30*time.Second {
		return w.minute(max(int((d+30*time.Second)/time.Minute), 1))
	}
	h := int((d + 30*time.Minute) / time.Hour)
	if h < 24 {
		return w.hour(h)
	}
	if h%24 == 0 {
		return w.day(h / 24)
	}
	return w.day(h/24) + " " + w.hour(h%24)
}

func (w words) dueText(due time.Time, zone *time.Location, now time.Time) string {
	if due.IsZero() {
		return ""
	}
	return w.due + " " + due.In(zone).Format(w.dateFmt) + w.relative(due, now)
}

// relative is the " (in 3 h)" / " (2 d ago)" suffix of a due time.
func (w words) relative(due, now time.Time) string {
	if d := due.Sub(now); d >= 0 {
		return " (" + w.left(w.duration(d)) + ")"
	}
	return " (" + w.ago(w.duration(due.Sub(now).Abs())) + ")"
}

// dueChangeText is the due phrase of an item now due at due and before
// at was: "moved from … to …" when both are set and differ, the plain due
// phrase when there was no earlier due time, "was due …" when it was
// dropped.
func (w words) dueChangeText(due, was time.Time, zone *time.Location, now time.Time) string {
	switch {
	case was.IsZero() || was.Equal(due):
		return w.dueText(due, zone, now)
	case due.IsZero():
		return w.wasDue(was.In(zone).Format(w.dateFmt))
	}
	return w.dueMoved(was.In(zone).Format(w.dateFmt), due.In(zone).Format(w.dateFmt)) + w.relative(due, now)
}

// wasText is the previous-title phrase of an item, empty when there is
// none or it reads the same as the title.
func (w words) wasText(was, title string) string {
	was = oneLine(was)
	if was == "" || was == title {
		return ""
	}
	return w.was(clipRunes(was, MaxWasTitle))
}

// clipRunes cuts s to at most n characters, ending a cut one in "…".
func clipRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimRight(s[:j], " ") + "…"
		}
		i++
	}
	return s
}

// Title is the headline of m in lang, relative to now.
func Title(m delivery.Message, lang string, now time.Time) string {
	return title(m, phrasebook(lang), now)
}

func title(m delivery.Message, w words, now time.Time) string {
	if m.Body != "" {
		head, _, _ := strings.Cut(strings.TrimSpace(m.Body), "\n")
		return head
	}
	task := firstNonEmpty(m.TaskName, m.TaskID, m.Title)
	switch m.Kind {
	case delivery.KindChanged:
		if task != "" {
			return w.changes(len(m.Items)+m.More, task)
		}
	case delivery.KindDigest:
		return w.digest(len(m.Items) + m.More)
	case delivery.KindDeadline:
		if it, ok := firstDue(m.Items); ok {
			if d := it.Due.Sub(now); d >= 0 {
				return w.dueIn(w.duration(d), it.Title)
			}
			return w.overdue(it.Title)
		}
	}
	return firstNonEmpty(m.Title, m.TaskName, w.fallback)
}

func firstDue(items []delivery.Item) (delivery.Item, bool) {
	for _, it := range items {
		if !it.Due.IsZero() {
			return it, true
		}
	}
	return delivery.Item{}, false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func prepare(m delivery.Message, lang string, zone *time.Location, now time.Time) view {
	if z := messageZone(m); z != nil {
		zone = z
	}
	if zone == nil {
		zone = time.UTC
	}
	w := phrasebook(lang)
	v := view{title: title(m, w, now), more: m.More, text: strings.TrimSpace(m.Text), w: w}
	if m.Body != "" { // laid out by a template: its first line heads the rest
		_, v.text, _ = strings.Cut(strings.TrimSpace(m.Body), "\n")
		v.text, v.more = strings.Trim(v.text, "\r\n"), 0
		v.title = oneLine(v.title)
		return v
	}
	items := m.Items
	limit := delivery.MaxItems
	if m.Digest != nil {
		limit = len(items) // a digest is cut to its own digest_max_items
		if m.Digest.Inbox {
			v.w.more = w.moreInInbox
		}
	}
	if len(items) > limit {
		v.more += len(items) - limit
		items = items[:limit]
	}
	for _, it := range items {
		iv := itemView{title: oneLine(it.Title), url: it.URL, due: w.dueChangeText(it.Due, it.WasDue, zone, now)}
		iv.summary, iv.lines = oneLine(it.Summary), diffLines(it.Diff)
		iv.linkOnly = iv.url != "" && iv.url == oneLine(it.Title) // format: link shows it once
		if it.Change != "" {
			iv.change = w.change[it.Change]
			if iv.change == "" {
				iv.change = it.Change
			}
		}
		if iv.title == "" {
			iv.title = it.ID
		}
		iv.was = w.wasText(it.WasTitle, iv.title)
		if it.Task != "" {
			iv.title = w.inTask(oneLine(it.Task), iv.title)
		}
		v.items = append(v.items, iv)
	}
	v.title = oneLine(v.title)
	if mt := m.Machine; mt != nil {
		if s := strings.TrimSpace(mt.Summary); s != "" {
			v.machine = append(v.machine, w.machineSummary(oneLine(s)))
		}
		if s := strings.TrimSpace(mt.Translation); s != "" {
			v.machine = append(v.machine, w.machineTranslation(strings.TrimSpace(s)))
		}
	}
	return v
}

// messageZone is the zone the message's task shows its times in, nil
// when it names none (or one this binary does not know).
func messageZone(m delivery.Message) *time.Location {
	if m.Zone == "" {
		return nil
	}
	z, err := time.LoadLocation(m.Zone)
	if err != nil {
		return nil
	}
	return z
}

// oneLine folds line breaks so one item stays on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Text renders m as plain text.
func Text(m delivery.Message, lang string, zone *time.Location, now time.Time) string {
	v := prepare(m, lang, zone, now)
	var b strings.Builder
	b.WriteString(v.title)
	b.WriteString("\n")
	if v.text != "" {
		b.WriteString("\n")
		b.WriteString(v.text)
		b.WriteString("\n")
	}
	if len(v.items) > 0 {
		b.WriteString("\n")
	}
	for _, it := range v.items {
		b.WriteString("• ")
		if it.change != "" {
			b.WriteString("[" + it.change + "] ")
		}
		b.WriteString(it.title + it.was)
		if it.due != "" {
			b.WriteString(v.w.separator + it.due)
		}
		for _, l := range it.under() {
			b.WriteString("\n  " + l)
		}
		if it.url != "" && !it.linkOnly {
			b.WriteString("\n  " + it.url)
		}
		b.WriteString("\n")
	}
	if v.more > 0 {
		b.WriteString(v.w.more(v.more) + "\n")
	}
	for _, l := range v.machine {
		b.WriteString("\n" + l + "\n")
	}
	return b.String()
}
