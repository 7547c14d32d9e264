package conversation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/source"
)

// This file is the optional assistant path for plain-language chat
// (docs/chat.md, Assistant): a model reads what someone wrote and suggests one of a closed
// set of actions. herald checks every suggestion and carries out only the
// harmless ones itself: it lists the person's tasks, shows an explanation,
// or turns a draft into the text of an ordinary /watch or /remind command
// that the person must confirm; the request that follows still needs an
// admin's approval as policy says. Nothing a model answers can approve,
// reject, delete, pause, resume or run anything.

// Assistant reads plain-language text. Implementations talk to a model
// (conversation/assistant); the core validates whatever they return.
type Assistant interface {
	Interpret(ctx context.Context, a Ask) (Suggestion, error)
}

// Ask is one plain-language message put to the assistant.
type Ask struct {
	Text string // what the person wrote
	Lang string // "en" | "zh": the language any text for the person must be in
	Zone string // the default zone's name, for schedules
}

// The actions a Suggestion may name: a closed set.
const (
	SuggestDraft   = "draft"   // a watch or reminder request, for the person to confirm
	SuggestList    = "list"    // the person's tasks (/tasks)
	SuggestExplain = "explain" // a short answer about herald's commands
)

// Suggestion is the assistant's reading of an Ask.
type Suggestion struct {
	Action string // SuggestDraft | SuggestList | SuggestExplain
	Draft  Draft  // SuggestDraft
	Text   string // SuggestExplain
	Query  string // SuggestSearch: the words to look for in the asker's history
}

// Draft is a request the assistant proposes, in the terms of /watch and
// /remind.
type Draft struct {
	URL      string
	Schedule string // schedule text as /watch takes it ("every 1h"); "" asks, as /watch does
	Kind     string // a kind of the table in tasks/source; "" = detect
	Name     string
	// RemindBefore, when not empty, makes the draft a /remind request.
	RemindBefore []time.Duration
}

// Bounds on what a suggestion may carry.
const (
	// MaxExplain is the longest explanation shown, in characters.
	MaxExplain = 1000
	// DefaultAssistantPerHour is how many asks one principal may make in
	// an hour when Options.AssistantPerHour is zero.
	DefaultAssistantPerHour = 30
	assistantWindow         = time.Hour
)

// errBadSuggestion reports a suggestion herald will not act on.
var errBadSuggestion = errors.New("assistant: unusable suggestion")

// SetAssistant switches the assistant path (config reload): nil turns it
// off; perHour <= 0 means DefaultAssistantPerHour.
func (c *Core) SetAssistant(a Assistant, perHour int) {
	if perHour <= 0 {
		perHour = DefaultAssistantPerHour
	}
	c.asMu.Lock()
	c.assistant, c.perHour = a, perHour
	c.asMu.Unlock()
}

func (c *Core) currentAssistant() (Assistant, int) {
	c.asMu.RLock()
	defer c.asMu.RUnlock()
	return c.assistant, c.perHour
}

// plainTalk answers plain-language text for a turn: the assistant's
// reading, its limits, and the drafts it offers to send.
type plainTalk struct{ t *turn }

// plainHelp is the short answer to plain text when no assistant can help.
func (pt plainTalk) plainHelp() string {
	return pt.t.tr("assist.i_understand_commands_try")
}

// unavailable is the short help plus one plain sentence: whatever went
// wrong with the assistant, the person sees only this.
func (pt plainTalk) unavailable(err error) []Reply {
	pt.t.c.log.Warn().Str("channel", pt.t.m.Channel).Err(err).Msg("assistant unavailable; answered with help")
	return []Reply{{Text: pt.plainHelp() + "\n" + pt.t.tr("assist.assistant_for_plain_language")}}
}

// assist puts plain text to the assistant and acts on its suggestion.
func (pt plainTalk) assist(a Assistant, perHour int, text string) []Reply {
	ok, err := pt.allowAsk(perHour)
	if err != nil {
		return pt.unavailable(fmt.Errorf("assistant ask count: %w", err))
	}
	if !ok {
		return pt.t.reply("assist.you_have_asked_me", perHour)
	}
	s, err := a.Interpret(pt.t.ctx, Ask{Text: text, Lang: pt.t.lang, Zone: pt.t.c.zone().String()})
	if err != nil {
		return pt.unavailable(err)
	}
	switch s.Action {
	case SuggestList:
		return pt.t.list()
	case SuggestSearch:
		return historySearch{pt.t}.searchFor(s.Query)
	case SuggestExplain:
		msg := strings.TrimSpace(s.Text)
		if msg == "" || utf8.RuneCountInString(msg) > MaxExplain || !utf8.ValidString(msg) {
			return pt.unavailable(fmt.Errorf("%w: explanation empty or too long", errBadSuggestion))
		}
		return []Reply{{Text: Redact(msg)}}
	case SuggestDraft:
		cmd, err := pt.draftCommand(s.Draft)
		if err != nil {
			return pt.unavailable(err)
		}
		return pt.offerDraft(cmd)
	}
	return pt.unavailable(fmt.Errorf("%w: unknown action", errBadSuggestion))
}

// allowAsk counts one ask against the principal's hourly allowance, kept
// in the store so that restarts and replicas share it. It reports false,
// without counting, when the allowance is used up.
func (pt plainTalk) allowAsk(perHour int) (bool, error) {
	pt.t.c.rateMu.Lock()
	defer pt.t.c.rateMu.Unlock()
	key := "assistant-asks/" + pt.t.m.Principal
	now := pt.t.c.o.Now()
	var asks []int64 // unix milliseconds
	b, err := pt.t.c.o.Store.Dialogs().Get(pt.t.ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return false, err
	default:
		_ = json.Unmarshal(b, &asks) // unreadable: start afresh
	}
	since := now.Add(-assistantWindow).UnixMilli()
	recent := asks[:0]
	for _, at := range asks {
		if at > since {
			recent = append(recent, at)
		}
	}
	if len(recent) >= perHour {
		return false, nil
	}
	recent = append(recent, now.UnixMilli())
	if b, err = json.Marshal(recent); err != nil {
		return false, err
	}
	return true, pt.t.c.o.Store.Dialogs().Put(pt.t.ctx, key, b, assistantWindow)
}

// draftCommand turns a draft into the ordinary command it stands for and
// reads that text back with the command parser: a draft is acceptable
// only when it is a /watch or /remind a person could have typed, saying
// exactly what the draft says.
func (pt plainTalk) draftCommand(d Draft) (Command, error) {
	text, err := draftText(d)
	if err != nil {
		return Command{}, err
	}
	cmd, err := Parse(text, "", pt.t.c.zone())
	if err != nil {
		return Command{}, fmt.Errorf("%w: draft does not read as a command", errBadSuggestion)
	}
	want, err := checkURL(cmd.Name, d.URL)
	switch {
	case err != nil, cmd.URL != want:
		return Command{}, fmt.Errorf("%w: draft address", errBadSuggestion)
	case cmd.TaskName != d.Name, cmd.Kind != d.Kind, len(cmd.Before) > len(d.RemindBefore),
		(cmd.Schedule == "") != (strings.TrimSpace(d.Schedule) == ""):
		return Command{}, fmt.Errorf("%w: draft reads differently as a command", errBadSuggestion)
	}
	return cmd, nil
}

// draftText writes a draft as /watch or /remind text.
func draftText(d Draft) (string, error) {
	bad := func(what string) error { return fmt.Errorf("%w: draft %s", errBadSuggestion, what) }
	if d.URL == "" || len(d.URL) > 2048 || !plainLine(d.URL) || strings.ContainsAny(d.URL, " "+string(ideographicSpace)) {
		return "", bad("address")
	}
	lower := strings.ToLower(d.URL)
	if !strings.HasPrefix(lower, "https://") && !strings.HasPrefix(lower, "http://") {
		return "", bad("address")
	}
	var b strings.Builder
	if len(d.RemindBefore) > 0 {
		b.WriteString("/remind ")
	} else {
		b.WriteString("/watch ")
	}
	b.WriteString(d.URL)
	if s := strings.TrimSpace(d.Schedule); s != "" {
		if utf8.RuneCountInString(s) > 100 || !plainLine(s) {
			return "", bad("schedule")
		}
		b.WriteString(" " + s)
	}
	switch {
	case d.Kind == "":
	case source.Valid(d.Kind):
		b.WriteString(" as " + d.Kind)
	default:
		return "", bad("kind")
	}
	if d.Name != "" {
		if utf8.RuneCountInString(d.Name) > 80 || !plainLine(d.Name) || strings.ContainsFunc(d.Name, isQuote) || strings.TrimSpace(d.Name) != d.Name {
			return "", bad("name")
		}
		b.WriteString(` name "` + d.Name + `"`)
	}
	if n := len(d.RemindBefore); n > 0 {
		if n > 10 {
			return "", bad("reminders")
		}
		parts := make([]string, n)
		for i, before := range d.RemindBefore {
			if before <= 0 || before > 366*24*time.Hour {
				return "", bad("reminders")
			}
			parts[i] = shortDuration(before)
		}
		b.WriteString(" before " + strings.Join(parts, ","))
	}
	return b.String(), nil
}

// plainLine reports whether s is valid text on one line.
func plainLine(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

func isQuote(r rune) bool {
	if _, ok := closers[r]; ok {
		return true
	}
	for _, c := range closers {
		if r == c {
			return true
		}
	}
	return false
}

// Button actions of a draft's confirmation.
const (
	actionDraftSend = "draft_send"
	actionDraftDrop = "draft_drop"
)

// offerDraft shows the draft as the command it stands for and waits for
// the person's explicit confirmation (an answer or a button).
func (pt plainTalk) offerDraft(cmd Command) []Reply {
	token, err := draftToken()
	if err != nil {
		return pt.t.failed(err)
	}
	d := dialog{Ask: "confirm", Command: cmd.Name, URL: cmd.URL, Kind: cmd.Kind, Selector: cmd.Selector, Name: cmd.TaskName,
		Before: cmd.Before, Schedule: cmd.Schedule, Token: token}
	if err := (dialogs{pt.t}).saveDialog(d); err != nil {
		return pt.t.failed(err)
	}
	shown := pt.commandText(cmd)
	r := Reply{Text: pt.t.tr("assist.i_can_send_this", shown)}
	if pt.t.m.Channel != "console" { // the console has no buttons; its people answer in words
		r.Buttons = []Button{
			{Label: pt.t.tr("assist.send"), Action: actionDraftSend, Arg: token},
			{Label: pt.t.tr("assist.drop"), Action: actionDraftDrop, Arg: token},
		}
	}
	return []Reply{r}
}

// commandText renders a parsed /watch or /remind for chat; the address is
// shown as ShowURL shows it (no query).
func (pt plainTalk) commandText(cmd Command) string {
	var b strings.Builder
	b.WriteString("/" + cmd.Name + " " + ShowURL(cmd.URL))
	if cmd.Schedule != "" {
		b.WriteString(" " + cmd.Schedule)
	}
	if cmd.Kind != "" {
		b.WriteString(" as " + cmd.Kind)
	}
	if cmd.TaskName != "" {
		b.WriteString(` name "` + cmd.TaskName + `"`)
	}
	if len(cmd.Before) > 0 {
		b.WriteString(" before " + strings.ReplaceAll(durations(cmd.Before), " ", ""))
	}
	return b.String()
}

func draftToken() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("draft token: %w", err)
	}
	return "d-" + hex.EncodeToString(b), nil
}

// confirmWord is an explicit yes of a draft: an empty answer or a word
// for the default is not one.
func confirmWord(s string) bool { return s != "" && !isWord(s, wordsDefault) && isWord(s, wordsYes) }

// answerDraft takes the answer to a shown draft: yes runs the ordinary
// /watch (or /remind) flow, no drops it, anything else is a new message.
func (pt plainTalk) answerDraft(d dialog, text string) []Reply {
	word := strings.ToLower(strings.Trim(text, answerEnds))
	switch {
	case confirmWord(word):
		dialogs{pt.t}.clearDialog()
		return pt.t.request(d.command())
	case isWord(word, wordsNo):
		dialogs{pt.t}.clearDialog()
		return pt.t.reply("assist.dropped_nothing_was_sent")
	}
	dialogs{pt.t}.clearDialog()
	return pt.t.plain()
}

// pressDraft answers a draft's Send or Drop button, for the person it was
// drafted for, while it is still pending.
func (pt plainTalk) pressDraft(p Press) []Reply {
	d, ok := dialogs{pt.t}.dialog()
	if !ok || d.Ask != "confirm" || d.Token == "" || d.Token != p.Arg {
		return []Reply{{Toast: pt.t.tr("button.no_longer_valid")}}
	}
	dialogs{pt.t}.clearDialog()
	if p.Action == actionDraftDrop {
		msg := pt.t.tr("assist.dropped_nothing_was_sent")
		return []Reply{{Text: msg, Edit: true, Toast: msg}}
	}
	out := pt.t.request(d.command())
	for i := range out {
		out[i].Edit = i == 0
	}
	if len(out) > 0 {
		out[0].Toast = pt.t.tr("assist.sent")
	}
	return out
}

// command is the request a confirmed draft stands for.
func (d dialog) command() Command {
	return Command{Name: d.Command, URL: d.URL, Kind: d.Kind, Selector: d.Selector, TaskName: d.Name, Before: d.Before, Schedule: d.Schedule, Addressed: true}
}
