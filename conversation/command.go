// Package conversation turns chat messages into requests for the task
// manager and answers people. This file holds the chat command grammar
// (README, Chat commands), shared by Telegram, Feishu and the console.
package conversation

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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
	// "mute", "quiet", "lang", "cancel", "history", "forget", "downloads".
	Name     string
	URL      string // watch, remind
	Schedule string // canonical schedule text; "" if not given
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

// ParseError is a command that cannot be carried out as typed. En and Zh
// are short, plain and actionable; they never echo a URL's query or
// credentials.
type ParseError struct {
	Code string
	En   string
	Zh   string
}

func (e *ParseError) Error() string { return e.En }

var aliases = map[string]string{
	"help": "help", "start": "help", "watch": "watch", "remind": "remind", "tasks": "tasks",
	"task": "task", "pause": "pause", "resume": "resume", "delete": "delete", "run": "run",
	"approve": "approve", "reject": "reject", "inbox": "inbox", "read": "read", "mute": "mute",
	"quiet": "quiet", "cancel": "cancel", "lang": "lang", "language": "lang",
	"history": "history", "forget": "forget", "token": "token", "downloads": "downloads", "files": "downloads",
	// Chinese
	"帮助": "help", "订阅": "watch", "监控": "watch", "关注": "watch", "提醒": "remind",
	"任务": "tasks", "任务列表": "tasks", "详情": "task", "暂停": "pause", "恢复": "resume",
	"删除": "delete", "运行": "run", "批准": "approve", "同意": "approve", "拒绝": "reject",
	"收件箱": "inbox", "已读": "read", "静音": "mute", "免打扰": "quiet", "取消": "cancel", "语言": "lang",
	"历史": "history", "搜索": "history", "忘记": "forget", "清除历史": "forget", "令牌": "token",
	"下载": "downloads", "文件": "downloads",
}

// kindChoice is the kinds as a usage line offers them: rss|ical|….
var kindChoice = strings.Join(source.Names(), "|")

var usage = map[string][2]string{
	"help":      {"/help", "/help"},
	"watch":     {`/watch <url> [every 30m | daily 08:00 [Area/City] | at 2026-12-01 09:00] [as ` + kindChoice + `] [selector <css>] [name "text"]`, `/watch <网址> [每 30 分钟 | 每天 08:00 [Area/City] | at 2026-12-01 09:00] [as ` + kindChoice + `] [selector <css>] [name 「名称」]`},
	"remind":    {"/remind <url> [before 72h,24h,2h]", "/remind <网址> [before 72h,24h,2h]"},
	"tasks":     {"/tasks", "/tasks"},
	"task":      {"/task <id>", "/task <任务编号>"},
	"pause":     {"/pause <id>", "/pause <任务编号>"},
	"resume":    {"/resume <id>", "/resume <任务编号>"},
	"delete":    {"/delete <id>", "/delete <任务编号>"},
	"run":       {"/run <id>", "/run <任务编号>"},
	"approve":   {"/approve <request-id>", "/approve <申请编号>"},
	"reject":    {"/reject <request-id> [reason]", "/reject <申请编号> [原因]"},
	"inbox":     {"/inbox [id]", "/inbox [编号]"},
	"read":      {"/read <id|all>", "/read <编号|all>"},
	"lang":      {"/lang en|zh|auto", "/lang en|zh|auto"},
	"mute":      {"/mute <task-id> <duration, like 2h or 1d | off>", "/mute <任务编号> <时长，如 2h 或 1d | off>"},
	"quiet":     {"/quiet <HH:MM-HH:MM | off>", "/quiet <HH:MM-HH:MM | off>"},
	"cancel":    {"/cancel", "/cancel"},
	"history":   {"/history <words> [page N]", "/history <关键词> [page N]"},
	"forget":    {"/forget", "/forget"},
	"token":     {"/token <site-url> [off]", "/token <网站网址> [off]"},
	"downloads": {"/downloads <task-id>", "/downloads <任务编号>"},
}

func usageErr(name, code, en, zh string) *ParseError {
	u := usage[name]
	if en != "" {
		en += " "
	}
	if zh != "" {
		zh += " "
	}
	return &ParseError{Code: code, En: en + "Usage: " + u[0], Zh: zh + "用法：" + u[1]}
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
	en := fmt.Sprintf("Unknown command /%s. Send /help to see what I can do.", shown)
	zh := fmt.Sprintf("未知命令 /%s。发送 /help 查看可用命令。", shown)
	if s := suggest(strings.ToLower(head)); s != "" {
		en = fmt.Sprintf("Unknown command /%s. Did you mean /%s? Send /help to see all commands.", shown, s)
		zh = fmt.Sprintf("未知命令 /%s。你是想用 /%s 吗？发送 /help 查看全部命令。", shown, s)
	}
	return &ParseError{Code: CodeUnknownCommand, En: en, Zh: zh}
}

// suggest returns the command closest to a mistyped one, if close enough.
func suggest(s string) string {
	best, bestD := "", 3
	for name := range usage {
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
