package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

// DefaultSchedule is used when a request names none and the follow-up
// question is answered with "ok".
const DefaultSchedule = "every 1h"

// defaultBefore are the reminder offsets of /remind without "before".
var defaultBefore = []time.Duration{72 * time.Hour, 24 * time.Hour, 2 * time.Hour}

// turn is one message being answered.
type turn struct {
	c    *Core
	ctx  context.Context
	m    Message
	lang string
	// secret: the message carried a secret (a token); it is kept nowhere.
	secret bool
}

func (t *turn) zh() bool { return t.lang == "zh" }

// tr is the wording of key in the turn's language (package text), with
// args filled in.
func (t *turn) tr(key string, args ...any) string { return text.Format(t.lang, key, args...) }

// trCount is tr of key+".one" when n is 1 and the language words it
// apart ("1 item"), else of key.
func (t *turn) trCount(key string, n int, args ...any) string {
	if n == 1 && text.Of(t.lang).Has(key+".one") {
		key += ".one"
	}
	return t.tr(key, args...)
}

// reply is a one-message answer worded by key.
func (t *turn) reply(key string, args ...any) []Reply { return []Reply{{Text: t.tr(key, args...)}} }

func (t *turn) run() []Reply {
	if t.m.Button != nil {
		return approvals{t}.press(*t.m.Button)
	}
	if t.m.File != nil {
		return t.importFile(*t.m.File)
	}
	cmd, err := Parse(t.m.Text, t.c.o.BotName, t.c.zone())
	if errors.Is(err, ErrNotCommand) {
		return t.plain()
	}
	if !cmd.Addressed {
		return nil
	}
	if cmd.Name == "inbox" && len(cmd.Args) == 1 && isWord(cmd.Args[0], wordsToken) {
		dialogs{t}.clearDialog()
		return inboxView{t}.inboxToken()
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		return []Reply{{Text: pe.in(t.lang)}}
	}
	if err != nil {
		return t.reply("turn.i_could_not_read")
	}
	// A new command supersedes a pending question.
	had := dialogs{t}.clearDialog()
	switch cmd.Name {
	case "help":
		return t.help()
	case "watch", "remind":
		return t.request(cmd)
	case "tasks":
		return t.list()
	case "task":
		return t.show(cmd.ID)
	case "pause", "resume", "delete":
		return t.transition(cmd.Name, cmd.ID)
	case "run":
		return t.runNow(cmd.ID)
	case "approve":
		return approvals{t}.decide(cmd.ID, true, "", false)
	case "reject":
		return approvals{t}.decide(cmd.ID, false, cmd.Reason, false)
	case "inbox":
		if cmd.ID != "" {
			return inboxView{t}.showItem(cmd.ID)
		}
		return inboxView{t}.inbox()
	case "read":
		if cmd.ID != "all" {
			return inboxView{t}.showItem(cmd.ID)
		}
		return inboxView{t}.read(cmd.ID)
	case "lang":
		return t.setLang(cmd.ID)
	case "mute":
		return t.mute(cmd.ID, cmd.Duration)
	case "quiet":
		return t.quiet(cmd.Quiet)
	case "digest":
		return t.digest(cmd.Schedule)
	case "history":
		return historySearch{t}.history(cmd.Query, cmd.Page)
	case "forget":
		return historySearch{t}.forget()
	case "token":
		return courseSites{t}.token(cmd)
	case "login":
		return signIns{t}.login(cmd)
	case "downloads":
		return t.downloads(cmd.ID)
	case "whoami":
		return t.whoami()
	case "cancel":
		if had {
			return t.reply("turn.cancelled")
		}
		return t.reply("turn.nothing_to_cancel")
	}
	return t.reply("turn.send_help_to_see")
}

// whoami names the asker's principal and this chat's address (and the
// forum topic's), as the config's admins, requesters and recipients name
// them.
func (t *turn) whoami() []Reply {
	s := t.tr("turn.whoami", t.m.Principal, t.m.Chat)
	if t.m.Topic != "" {
		s += t.tr("turn.whoami_topic", t.m.Topic)
	}
	return []Reply{{Text: s}}
}

// ---------------------------------------------------------------- plain text and dialogs

// plain answers text that is not a command: the answer to a pending
// question, else the assistant's reading when one is configured, else a
// short help.
func (t *turn) plain() []Reply {
	text := strings.TrimSpace(t.m.Text)
	d, ok := dialogs{t}.dialog()
	if ok {
		return t.answer(d, text)
	}
	if text == "" {
		return nil
	}
	if looksLikeStrayToken(text) {
		return courseSites{t}.strayToken()
	}
	if a, perHour := t.c.currentAssistant(); a != nil {
		return plainTalk{t}.assist(a, perHour, text)
	}
	return []Reply{{Text: plainTalk{t}.plainHelp()}}
}

// dialog is a question waiting for its answer in one chat, from one person.
type dialog struct {
	Ask     string `json:"ask"` // schedule | confirm (an assistant's draft) | token | feed (a page's feeds offered)
	Command string `json:"command"`
	URL     string `json:"url"`
	Kind    string `json:"kind,omitempty"`
	Name    string `json:"name,omitempty"`
	// Selector is an html watch's CSS selector ("" picks one).
	Selector string          `json:"selector,omitempty"`
	Before   []time.Duration `json:"before,omitempty"`
	Courses  []string        `json:"courses,omitempty"`
	// Schedule and Token belong to a draft: its schedule ("" asks) and
	// the id its buttons carry.
	Schedule string    `json:"schedule,omitempty"`
	Token    string    `json:"token,omitempty"`
	Expires  time.Time `json:"expires"`
	// Feeds are the feeds (or RSSHub routes) offered for a page, by
	// number (Ask "feed").
	Feeds []source.Feed `json:"feeds,omitempty"`
}

// dialogs keeps a turn's pending question (one per chat and person) in
// the store until it is answered, replaced or expires.
type dialogs struct{ t *turn }

func (ds dialogs) dialogKey() string { return "dialog/" + ds.t.m.Chat + "|" + ds.t.m.Principal }

func (ds dialogs) dialog() (dialog, bool) {
	var d dialog
	b, err := ds.t.c.o.Store.Dialogs().Get(ds.t.ctx, ds.dialogKey())
	if err != nil {
		return d, false
	}
	if json.Unmarshal(b, &d) != nil || !ds.t.c.o.Now().Before(d.Expires) {
		return d, false
	}
	return d, true
}

func (ds dialogs) saveDialog(d dialog) error {
	d.Expires = ds.t.c.o.Now().Add(DialogTTL)
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return ds.t.c.o.Store.Dialogs().Put(ds.t.ctx, ds.dialogKey(), b, DialogTTL)
}

// clearDialog drops the pending question, reporting whether there was one.
func (ds dialogs) clearDialog() bool {
	b, err := ds.t.c.o.Store.Dialogs().Get(ds.t.ctx, ds.dialogKey())
	if err != nil {
		return false // none (or expired): nothing to write
	}
	var d dialog
	had := json.Unmarshal(b, &d) == nil && ds.t.c.o.Now().Before(d.Expires)
	if err := ds.t.c.o.Store.Dialogs().Delete(ds.t.ctx, ds.dialogKey()); err != nil && !errors.Is(err, store.ErrNotFound) {
		ds.t.c.log.Warn().Err(err).Msg("cannot clear dialog state")
	}
	return had
}

// answer takes the reply to a pending question.
func (t *turn) answer(d dialog, text string) []Reply {
	switch d.Ask {
	case "schedule":
		sched := DefaultSchedule
		if a := strings.Trim(text, answerEnds); a != "" && !isWord(a, wordsYes) {
			s, err := parseScheduleAnswer(text, t.c.zone())
			if err != nil {
				if serr := (dialogs{t}).saveDialog(d); serr != nil {
					return t.failed(serr)
				}
				return t.reply("turn.schedule_answer_bad", scheduleProblem(err))
			}
			sched = s
		}
		dialogs{t}.clearDialog()
		return t.submit(Command{Name: d.Command, URL: d.URL, Kind: d.Kind, Selector: d.Selector, TaskName: d.Name, Before: d.Before, Schedule: sched, Courses: d.Courses})
	case "token":
		return courseSites{t}.takeToken(d, text)
	case "cookie":
		return signIns{t}.takeCookie(d, text)
	case "confirm":
		return plainTalk{t}.answerDraft(d, text)
	case "feed":
		return feedOffer{t}.answer(d, text)
	}
	dialogs{t}.clearDialog()
	return t.plain()
}

// parseScheduleAnswer reads "every 2h", "2h", "daily 08:00", "08:00".
func parseScheduleAnswer(text string, zone *time.Location) (string, error) {
	text = strings.TrimSpace(text)
	var first error
	for _, cand := range []string{text, "every " + text, "daily " + text} {
		s, err := schedule.Parse(cand, zone)
		if err == nil {
			return s.String(), nil
		}
		if first == nil {
			first = err
		}
	}
	return "", first // a *schedule.ParseError: its message in each language
}
