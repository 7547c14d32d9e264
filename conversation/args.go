package conversation

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/andybalholm/cascadia"

	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

func isSpace(r rune) bool {
	return unicode.IsSpace(r) || r == '\u3000' || r == '\u200b' || r == '\ufeff'
}

type token struct {
	text   string
	quoted bool
}

var closers = map[rune]rune{'"': '"', '\'': '\'', '“': '”', '‘': '’', '「': '」', '『': '』', '《': '》', '«': '»'}

// tokenize splits on any whitespace; a token opening with a quote mark
// runs to the matching closing mark.
func tokenize(s string) ([]token, *ParseError) {
	var out []token
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if isSpace(rs[i]) {
			i++
			continue
		}
		if c, ok := closers[rs[i]]; ok && len(out) > 0 {
			j := i + 1
			for j < len(rs) && rs[j] != c && !(c == '"' && rs[j] == '”') {
				j++
			}
			if j == len(rs) {
				return nil, &ParseError{Code: CodeUsage, En: "A quoted text is missing its closing quote mark.", Zh: "引号没有闭合。"}
			}
			out = append(out, token{text: strings.TrimFunc(string(rs[i+1:j]), isSpace), quoted: true})
			i = j + 1
			continue
		}
		j := i
		for j < len(rs) && !isSpace(rs[j]) {
			j++
		}
		out = append(out, token{text: string(rs[i:j])})
		i = j
	}
	if len(out) == 0 {
		out = append(out, token{})
	}
	return out, nil
}

type argParser struct {
	cmd  *Command
	toks []token
	zone *time.Location
}

func (p *argParser) parse() error {
	c := p.cmd
	switch c.Name {
	case "help":
		return nil // topics are free text
	case "tasks", "cancel", "forget":
		return p.none()
	case "inbox":
		if len(p.toks) == 0 {
			return nil
		}
		id, err := p.id(0)
		if err != nil {
			return err
		}
		c.ID = id
		return p.none(1)
	case "lang":
		if len(p.toks) > 0 {
			c.ID = p.toks[0].text
		}
		return p.none(1)
	case "history":
		return p.history()
	case "task", "pause", "resume", "delete", "run", "approve", "downloads":
		return p.idOnly()
	case "reject":
		id, err := p.id(0)
		if err != nil {
			return err
		}
		c.ID = id
		var parts []string
		for _, t := range p.toks[1:] {
			parts = append(parts, t.text)
		}
		c.Reason = strings.Join(parts, " ")
		if utf8.RuneCountInString(c.Reason) > 500 {
			return usageErr("reject", CodeUsage, "The reason is too long (500 characters at most).", "原因太长（最多 500 字）。")
		}
		return nil
	case "read":
		if len(p.toks) > 0 && (strings.EqualFold(p.toks[0].text, "all") || p.toks[0].text == "全部") {
			c.ID = "all"
			return p.none(1)
		}
		return p.idOnly()
	case "mute":
		return p.mute()
	case "quiet":
		return p.quiet()
	case "watch", "remind":
		return p.watch()
	case "token":
		return p.site()
	}
	return unknownCommand(c.Name)
}

// idOnly reads a command whose one argument is an id.
func (p *argParser) idOnly() error {
	id, err := p.id(0)
	if err != nil {
		return err
	}
	p.cmd.ID = id
	return p.none(1)
}

// none fails when tokens from index from on are present.
func (p *argParser) none(from ...int) error {
	i := 0
	if len(from) > 0 {
		i = from[0]
	}
	if len(p.toks) > i {
		return p.unexpected(p.toks[i].text)
	}
	return nil
}

func (p *argParser) unexpected(tok string) error {
	shown := tok
	if utf8.RuneCountInString(shown) > 30 {
		shown = string([]rune(shown)[:30]) + "…"
	}
	if strings.Contains(tok, "://") {
		shown = "a second URL"
		return usageErr(p.cmd.Name, CodeUnexpected, "I don't know what to do with "+shown+".", "多余的网址。")
	}
	return usageErr(p.cmd.Name, CodeUnexpected,
		fmt.Sprintf("I don't know what to do with %q.", shown),
		fmt.Sprintf("无法理解 %q。", shown))
}

// id reads an identifier at token i.
func (p *argParser) id(i int) (string, error) {
	if len(p.toks) <= i || p.toks[i].text == "" {
		return "", usageErr(p.cmd.Name, CodeUsage, "Which one? Give its id.", "请给出编号。")
	}
	s := p.toks[i].text
	if !validID(s) {
		return "", usageErr(p.cmd.Name, CodeBadID,
			"An id has letters, digits, '-', '_', '.' or ':' only, like t-7f3a.",
			"编号只能包含字母、数字和 - _ . :，例如 t-7f3a。")
	}
	return s, nil
}

func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':'
		if !ok {
			return false
		}
	}
	return true
}

func (p *argParser) mute() error {
	id, err := p.id(0)
	if err != nil {
		return err
	}
	p.cmd.ID = id
	if len(p.toks) < 2 {
		return usageErr("mute", CodeUsage, "For how long?", "静音多久？")
	}
	rest := p.toks[1:]
	if t := rest[0].text; len(rest) == 1 && (strings.EqualFold(t, "off") || t == "关闭") {
		p.cmd.Duration = 0
		return nil
	}
	var parts []string
	for _, t := range rest {
		parts = append(parts, t.text)
	}
	d, err := schedule.ParseDuration(strings.Join(parts, ""))
	if err != nil {
		en, zh := scheduleProblem(err)
		return usageErr("mute", CodeBadDuration, "That duration doesn't work: "+en+".", "时长无效："+zh+"。")
	}
	p.cmd.Duration = d
	return nil
}

func (p *argParser) quiet() error {
	if len(p.toks) == 0 {
		return usageErr("quiet", CodeUsage, "Give quiet hours or off.", "请给出免打扰时段或 off。")
	}
	var parts []string
	for _, t := range p.toks {
		parts = append(parts, t.text)
	}
	s := schedule.Normalize(strings.Join(parts, ""))
	if strings.EqualFold(s, "off") || s == "关闭" {
		p.cmd.Quiet = "off"
		return nil
	}
	for _, dash := range []string{"–", "—", "~", "〜", "至", "到", "to"} {
		s = strings.ReplaceAll(s, dash, "-")
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return usageErr("quiet", CodeBadQuiet, "Quiet hours look like 22:00-07:00.", "免打扰时段的格式是 22:00-07:00。")
	}
	from, ok1 := clock(a)
	to, ok2 := clock(b)
	if !ok1 || !ok2 {
		return usageErr("quiet", CodeBadQuiet, "Quiet hours look like 22:00-07:00, on a 24-hour clock.", "免打扰时段的格式是 22:00-07:00（24 小时制）。")
	}
	if from == to {
		return usageErr("quiet", CodeBadQuiet, "Quiet hours must start and end at different times.", "免打扰的开始和结束时间不能相同。")
	}
	p.cmd.Quiet = from + "-" + to
	return nil
}

// clock reads "H:MM" or "HH:MM" and returns "HH:MM".
func clock(s string) (string, bool) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 {
		return "", false
	}
	hh, mm := 0, 0
	for _, r := range h {
		if r < '0' || r > '9' {
			return "", false
		}
		hh = hh*10 + int(r-'0')
	}
	for _, r := range m {
		if r < '0' || r > '9' {
			return "", false
		}
		mm = mm*10 + int(r-'0')
	}
	if hh > 23 || mm > 59 {
		return "", false
	}
	return fmt.Sprintf("%02d:%02d", hh, mm), true
}

// clause keywords of /watch and /remind.
const (
	kwSchedule = "schedule"
	kwAs       = "as"
	kwName     = "name"
	kwBefore   = "before"
	kwSelector = "selector"
	kwCourses  = "courses"
)

var keywords = map[string]string{
	"every": kwSchedule, "daily": kwSchedule, "weekly": kwSchedule, "at": kwSchedule, "cron": kwSchedule,
	"as": kwAs, "kind": kwAs, "type": kwAs, "类型": kwAs, "格式": kwAs,
	"name": kwName, "named": kwName, "名称": kwName, "名字": kwName,
	"before": kwBefore, "提前": kwBefore,
	"selector": kwSelector, "css": kwSelector, "选择器": kwSelector,
	"courses": kwCourses, "course": kwCourses, "课程": kwCourses,
}

func keyword(t token) string {
	if t.quoted {
		return ""
	}
	if strings.HasPrefix(t.text, "每") {
		return kwSchedule
	}
	return keywords[strings.ToLower(t.text)]
}

func (p *argParser) watch() error {
	c := p.cmd
	seen := map[string]bool{}
	for i := 0; i < len(p.toks); {
		t := p.toks[i]
		kw := keyword(t)
		if kw == "" {
			if k, ok := source.ByWord(t.text); ok && i == 0 && c.Kind == "" && !t.quoted {
				c.Kind = k // "/watch canvas <site>": the kind first
				i++
				continue
			}
			if c.URL == "" && !t.quoted && looksLikeURL(t.text) {
				u, err := checkURL(c.Name, t.text)
				if err != nil {
					return err
				}
				c.URL = u
				i++
				continue
			}
			if c.URL == "" {
				return usageErr(c.Name, CodeMissingURL,
					"Start with the address to watch, like https://news.example.edu/feed.xml.",
					"请先给出要关注的网址，例如 https://news.example.edu/feed.xml。")
			}
			return p.unexpected(t.text)
		}
		if kw == kwBefore && c.Name != "remind" {
			return p.unexpected(t.text)
		}
		if seen[kw] {
			return usageErr(c.Name, CodeDuplicate,
				fmt.Sprintf("%q is given twice.", t.text), fmt.Sprintf("%q 重复了。", t.text))
		}
		seen[kw] = true
		// The clause runs to the next keyword or URL.
		j := i + 1
		for j < len(p.toks) && keyword(p.toks[j]) == "" && !(c.URL == "" && looksLikeURL(p.toks[j].text)) {
			j++
		}
		if err := p.clause(kw, p.toks[i:j]); err != nil {
			return err
		}
		i = j
	}
	if c.URL == "" {
		return usageErr(c.Name, CodeMissingURL, "Which address? Give a URL.", "请给出网址。")
	}
	if len(c.Courses) > 0 && !source.TakesToken(c.Kind) {
		return usageErr(c.Name, CodeUsage, "Courses go with a course site, like /watch canvas https://school.instructure.com courses 12345,678.",
			"课程只适用于课程网站，例如 /watch canvas https://school.instructure.com courses 12345,678。")
	}
	return nil
}

func (p *argParser) clause(kw string, toks []token) error {
	c := p.cmd
	args := make([]string, 0, len(toks))
	for _, t := range toks[1:] {
		args = append(args, t.text)
	}
	switch kw {
	case kwSchedule:
		text := toks[0].text
		if len(args) > 0 {
			text += " " + strings.Join(args, " ")
		}
		s, err := schedule.Parse(text, p.zone)
		if err != nil {
			en, zh := scheduleProblem(err)
			return usageErr(c.Name, CodeBadSchedule, "That schedule doesn't work: "+en+".", "时间安排无效："+zh+"。")
		}
		c.Schedule, c.Parsed = s.String(), s
	case kwAs:
		if len(args) != 1 {
			return usageErr(c.Name, CodeBadKind, "Say which kind: "+source.List("as ", "", ", ", " or ")+".", "请指定类型："+source.List("as ", "", "、", " 或 ")+"。")
		}
		k, ok := source.ByWord(args[0])
		if !ok {
			return usageErr(c.Name, CodeBadKind,
				fmt.Sprintf("Unknown kind %q; use %s.", clip(args[0]), source.List("", "", ", ", " or ")),
				fmt.Sprintf("未知类型 %q；可用 %s。", clip(args[0]), source.List("", "", "、", " 或 ")))
		}
		c.Kind = k
	case kwName:
		name := strings.TrimSpace(strings.Join(args, " "))
		if name == "" {
			return usageErr(c.Name, CodeUsage, "Give the name after name.", "请在 name 后给出名称。")
		}
		if utf8.RuneCountInString(name) > 80 {
			return usageErr(c.Name, CodeUsage, "The name is too long (80 characters at most).", "名称太长（最多 80 字）。")
		}
		c.TaskName = name
	case kwBefore:
		return p.before(args)
	case kwSelector:
		return p.selector(args)
	case kwCourses:
		return p.courses(args)
	}
	return nil
}

func (p *argParser) before(args []string) error {
	text := schedule.Normalize(strings.Join(args, " "))
	text = strings.ReplaceAll(text, "、", ",")
	parts := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == ';' })
	if len(parts) == 0 {
		return usageErr("remind", CodeBadDuration, "Give the offsets after before, like before 72h,24h,2h.", "请在 before 后给出提前量，例如 before 72h,24h,2h。")
	}
	if len(parts) > 10 {
		return usageErr("remind", CodeBadDuration, "At most 10 reminder offsets.", "最多 10 个提醒时间。")
	}
	var out []time.Duration
	for _, s := range parts {
		d, err := schedule.ParseDuration(s)
		if err != nil {
			en, zh := scheduleProblem(err)
			return usageErr("remind", CodeBadDuration,
				fmt.Sprintf("Reminder offset %q doesn't work: %s.", clip(s), en),
				fmt.Sprintf("提醒时间 %q 无效：%s。", clip(s), zh))
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b time.Duration) int { return int((b - a) / time.Minute) })
	p.cmd.Before = out
	return nil
}

func clip(s string) string {
	if utf8.RuneCountInString(s) > 20 {
		return string([]rune(s)[:20]) + "…"
	}
	return s
}

func looksLikeURL(s string) bool {
	s = strings.ToLower(trimURL(s))
	return strings.Contains(s, "://") || strings.HasPrefix(s, "www.") || strings.HasPrefix(s, "mailto:")
}

// trimURL drops what chat clients and people put around a link.
func trimURL(s string) string {
	s = strings.TrimPrefix(strings.TrimSuffix(s, ">"), "<")
	return strings.TrimRight(s, "。，、；,;")
}

// checkURL accepts absolute http(s) URLs with a host and no credentials.
// Its messages name at most the scheme or host, never the query.
func checkURL(cmd, raw string) (string, error) {
	s := trimURL(raw)
	u, err := url.Parse(s)
	if err == nil && u.Scheme != "" && !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https") {
		return "", usageErr(cmd, CodeBadURL,
			fmt.Sprintf("Only http:// and https:// addresses can be watched, not %s:.", clip(u.Scheme)),
			fmt.Sprintf("只能关注 http:// 或 https:// 网址，不支持 %s:。", clip(u.Scheme)))
	}
	if err != nil || u.Host == "" || u.Scheme == "" {
		if strings.HasPrefix(strings.ToLower(s), "www.") {
			return "", usageErr(cmd, CodeBadURL, "Write the full address, starting with https://.", "请写完整网址，以 https:// 开头。")
		}
		return "", usageErr(cmd, CodeBadURL, "That URL can't be read; check it and send it again.", "无法识别这个网址，请检查后重发。")
	}
	if u.User != nil {
		return "", usageErr(cmd, CodeBadURL,
			"Don't put a password in the URL; an admin can configure credentials for this source.",
			"请不要把密码写在网址里；管理员可以为该来源配置凭据。")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	return u.String(), nil
}

// selector reads "selector <css>": checked as CSS at once, and it makes
// the watch an html one (a selector means nothing elsewhere).
func (p *argParser) selector(args []string) error {
	c := p.cmd
	sel := strings.TrimSpace(strings.Join(args, " "))
	if sel == "" {
		return usageErr(c.Name, CodeUsage, "Give the CSS selector after selector, like selector ul.news > li.", "请在 selector 后给出 CSS 选择器，例如 selector ul.news > li。")
	}
	if _, err := cascadia.Compile(sel); err != nil || utf8.RuneCountInString(sel) > 200 {
		return usageErr(c.Name, CodeUsage,
			fmt.Sprintf("The selector %q is not valid CSS.", clip(sel)),
			fmt.Sprintf("选择器 %q 不是有效的 CSS。", clip(sel)))
	}
	c.Selector = sel
	if c.Kind == "" {
		c.Kind = source.KindHTML
	}
	return nil
}
