// Package conversation turns chat messages into requests for the task
// manager and answers people. This file holds the chat command grammar
// (docs/chat.md, Chat commands), shared by Telegram, Feishu and the console.
package conversation

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

// ErrNotCommand reports text that does not start with a slash: it goes to
// the plain-language path, not the command parser.
var ErrNotCommand = errors.New("conversation: not a command")

// Command is one parsed chat command.
type Command struct {
	// Name is one of "help", "watch", "remind", "tasks", "task", "pause",
	// "resume", "delete", "run", "approve", "reject", "inbox", "read",
	// "mute", "quiet", "lang", "cancel", "history", "forget", "downloads",
	// "whoami", "digest".
	Name     string
	URL      string // watch, remind
	Schedule string // canonical schedule text; "" if not given; /digest: "off" too
	// Parsed is Schedule as the command parsed it, handed on to the
	// catalog so it is read once; nil when not given.
	Parsed   schedule.Schedule
	Kind     string          // a kind of the table in tasks/source; "" = detect
	Selector string          // selector <css>: an html watch's entries
	TaskName string          // name <text>
	Before   []time.Duration // remind offsets, longest first
	Courses  []string        // courses <ids>: a course site's course ids
	ID       string          // task / request / inbox item id ("all" for /read all); /lang's choice
	Reason   string          // reject
	Duration time.Duration   // mute; 0 with "off" lifts the mute
	Quiet    string          // "HH:MM-HH:MM" or "off"
	Query    string          // history: the words searched for, quotes kept
	Page     int             // history: 1-based page
	// Addressed is false when the command names another bot (/cmd@otherbot);
	// such a command is not for us and its arguments are not checked.
	Addressed bool
	Args      []string // raw arguments, quotes removed
}

// Error codes of ParseError.
const (
	CodeUnknownCommand = "unknown_command"
	CodeUsage          = "usage"
	CodeMissingURL     = "missing_url"
	CodeBadURL         = "bad_url"
	CodeBadKind        = "bad_kind"
	CodeBadSchedule    = "bad_schedule"
	CodeBadDuration    = "bad_duration"
	CodeBadID          = "bad_id"
	CodeBadQuiet       = "bad_quiet"
	CodeUnexpected     = "unexpected_argument"
	CodeDuplicate      = "duplicate_argument"
)

// ParseError is a command that cannot be carried out as typed. Its
// message is short, plain and actionable and never echoes a URL's query
// or credentials; En and Zh are its English and Chinese wording.
type ParseError struct {
	Code string
	En   string
	Zh   string
	word text.Localized // the message in any language
}

func (e *ParseError) Error() string { return e.En }

// aliases are the command words of every language (text.Words.Commands).
var aliases = func() map[string]string {
	m := map[string]string{}
	for _, c := range text.Catalogs() {
		for w, name := range c.Words.Commands {
			m[w] = name
		}
	}
	return m
}()

// kindChoice is the kinds as a usage line offers them: rss|ical|….
var kindChoice = strings.Join(source.Names(), "|")

// commands are the command names; usage.<name> in the catalogue is each
// one's usage line.
var commands = []string{"help", "watch", "remind", "tasks", "task", "pause", "resume", "delete", "run", "approve", "reject", "inbox", "read", "lang", "mute", "quiet", "cancel", "history", "forget", "token", "downloads", "whoami", "login", "digest"}

// usageLine is the usage of command name in lang.
func usageLine(lang, name string) string {
	if name == "watch" {
		return text.Format(lang, "usage.watch", kindChoice)
	}
	return text.Format(lang, "usage."+name)
}

// usageErr is a ParseError worded by key and args, followed by the usage
// of command name.
func usageErr(name, code, key string, args ...any) *ParseError {
	return newParseError(code, func(lang string) string {
		return text.Format(lang, key, args...) + " " + text.Format(lang, "usage.prefix") + usageLine(lang, name)
	})
}

// newParseError words a ParseError in every language.
func newParseError(code string, word text.Localized) *ParseError {
	return &ParseError{Code: code, En: word("en"), Zh: word("zh"), word: word}
}

// in is the error's message in lang.
func (e *ParseError) in(lang string) string {
	if e.word == nil {
		return e.En
	}
	return e.word(lang)
}

// Parse reads a chat command. Text that does not start with a slash
// (ASCII or full-width) returns ErrNotCommand. botUsername, when not empty,
// is our own name: /cmd@OtherBot returns Addressed=false and no error.
// Schedules are checked with schedule.Parse in defaultZone and stored in
// canonical form.
func Parse(text, botUsername string, defaultZone *time.Location) (Command, error) {
	text = strings.TrimFunc(text, isSpace)
	// A leading mention ("@herald /watch ...") as group chats deliver it.
	for strings.HasPrefix(text, "@") {
		i := strings.IndexFunc(text, isSpace)
		if i < 0 {
			return Command{}, ErrNotCommand
		}
		text = strings.TrimLeftFunc(text[i:], isSpace)
	}
	if t, ok := strings.CutPrefix(text, "／"); ok {
		text = "/" + t
	}
	if !strings.HasPrefix(text, "/") || len(text) == 1 {
		return Command{}, ErrNotCommand
	}
	toks, perr := tokenize(text[1:])
	if perr != nil {
		return Command{}, perr
	}
	head := toks[0].text
	var target string
	if i := strings.IndexByte(head, '@'); i >= 0 {
		head, target = head[:i], head[i+1:]
	}
	if head == "" {
		return Command{}, ErrNotCommand
	}
	raw := strings.ToLower(head)
	cmd := Command{Name: raw, Addressed: true}
	for _, t := range toks[1:] {
		cmd.Args = append(cmd.Args, t.text)
	}
	if target != "" && botUsername != "" && !strings.EqualFold(target, strings.TrimPrefix(botUsername, "@")) {
		cmd.Addressed = false
		if name, ok := aliases[raw]; ok {
			cmd.Name = name
		}
		return cmd, nil
	}
	name, ok := aliases[raw]
	if !ok {
		return cmd, unknownCommand(head)
	}
	cmd.Name = name
	if defaultZone == nil {
		defaultZone = time.UTC
	}
	p := &argParser{cmd: &cmd, toks: toks[1:], zone: defaultZone}
	if err := p.parse(); err != nil {
		return cmd, err
	}
	return cmd, nil
}

func unknownCommand(head string) *ParseError {
	shown := head
	if utf8.RuneCountInString(shown) > 24 {
		shown = string([]rune(shown)[:24]) + "…"
	}
	if s := suggest(strings.ToLower(head)); s != "" {
		return newParseError(CodeUnknownCommand, func(lang string) string {
			return text.Format(lang, "command.unknown_did_you_mean", shown, s)
		})
	}
	return newParseError(CodeUnknownCommand, func(lang string) string {
		return text.Format(lang, "command.unknown", shown)
	})
}

// suggest returns the command closest to a mistyped one, if close enough.
func suggest(s string) string {
	best, bestD := "", 3
	for _, name := range commands {
		if d := distance(s, name); d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	if bestD > 2 || len(s) < 3 {
		return ""
	}
	return best
}

// distance is the Levenshtein distance, capped to keep long input cheap.
func distance(a, b string) int {
	if len(a) > 32 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
