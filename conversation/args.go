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

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

func isSpace(r rune) bool {
	return unicode.IsSpace(r) || r == ideographicSpace || r == '\u200b' || r == '\ufeff'
}

type token struct {
	text   string
	quoted bool
}

// closers pair each opening quote mark with its closing one: ASCII and
// curly quotes, the CJK corner brackets (U+300C-300F), the double angle
// brackets (U+300A/B) and guillemets.
var closers = map[rune]rune{'"': '"', '\'': '\'', '“': '”', '‘': '’', '\u300c': '\u300d', '\u300e': '\u300f', '\u300a': '\u300b', '«': '»'}

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
				return nil, newParseError(CodeUsage, func(lang string) string { return text.Format(lang, "args.unclosed_quote") })
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
	case "tasks", "cancel", "forget", "whoami":
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
			return usageErr("reject", CodeUsage, "args.reason_is_too_long")
		}
		return nil
	case "read":
		if len(p.toks) > 0 && isWord(p.toks[0].text, wordsAll) {
			c.ID = "all"
			return p.none(1)
		}
		return p.idOnly()
	case "mute":
		return p.mute()
	case "quiet":
		return p.quiet()
	case "digest":
		return p.digest()
	case "watch", "remind":
		return p.watch()
	case "token", "login":
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
		return usageErr(p.cmd.Name, CodeUnexpected, "args.second_url")
	}
	return usageErr(p.cmd.Name, CodeUnexpected, "args.unexpected", shown)
}

// id reads an identifier at token i.
func (p *argParser) id(i int) (string, error) {
	if len(p.toks) <= i || p.toks[i].text == "" {
		return "", usageErr(p.cmd.Name, CodeUsage, "args.which_one_give_its")
	}
	s := p.toks[i].text
	if !validID(s) {
		return "", usageErr(p.cmd.Name, CodeBadID, "args.id_has_letters_digits")
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
		return usageErr("mute", CodeUsage, "args.for_how_long")
	}
	rest := p.toks[1:]
	if t := rest[0].text; len(rest) == 1 && isWord(t, wordsOff) {
		p.cmd.Duration = 0
		return nil
	}
	var parts []string
	for _, t := range rest {
		parts = append(parts, t.text)
	}
	d, err := schedule.ParseDuration(strings.Join(parts, ""))
	if err != nil {
		return usageErr("mute", CodeBadDuration, "args.bad_duration", scheduleProblem(err))
	}
	p.cmd.Duration = d
	return nil
}

func (p *argParser) quiet() error {
	if len(p.toks) == 0 {
		return usageErr("quiet", CodeUsage, "args.give_quiet_hours_or")
	}
	var parts []string
	for _, t := range p.toks {
		parts = append(parts, t.text)
	}
	s := schedule.Normalize(strings.Join(parts, ""))
	if isWord(s, wordsOff) {
		p.cmd.Quiet = "off"
		return nil
	}
	for _, dash := range rangeDashes {
		s = strings.ReplaceAll(s, dash, "-")
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return usageErr("quiet", CodeBadQuiet, "args.quiet_hours_look_like")
	}
	from, ok1 := clock(a)
	to, ok2 := clock(b)
	if !ok1 || !ok2 {
		return usageErr("quiet", CodeBadQuiet, "args.quiet_hours_look_like_2")
	}
	if from == to {
		return usageErr("quiet", CodeBadQuiet, "args.quiet_hours_must_start")
	}
	p.cmd.Quiet = from + "-" + to
	return nil
}

// digest reads /digest's schedule (any form of the grammar) or off.
func (p *argParser) digest() error {
	if len(p.toks) == 0 {
		return usageErr("digest", CodeUsage, "args.give_digest_schedule_or")
	}
	var parts []string
	for _, t := range p.toks {
		parts = append(parts, t.text)
	}
	text := strings.Join(parts, " ")
	if isWord(schedule.Normalize(text), wordsOff) {
		p.cmd.Schedule = "off"
		return nil
	}
	s, err := schedule.Parse(text, p.zone)
	if err != nil {
		return usageErr("digest", CodeBadSchedule, "args.bad_schedule", scheduleProblem(err))
	}
	p.cmd.Schedule, p.cmd.Parsed = s.String(), s
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

// keywords are the clause words of every language (text.Words.Clauses).
var keywords = func() map[string]string {
	m := map[string]string{}
	for _, c := range text.Catalogs() {
		for w, kw := range c.Words.Clauses {
			m[strings.ToLower(w)] = kw
		}
	}
	return m
}()

// scheduleOpeners open a schedule clause by themselves (text.Words).
var scheduleOpeners = words(func(w text.Words) []string { return w.ScheduleOpeners })

func keyword(t token) string {
	if t.quoted {
		return ""
	}
	for _, o := range scheduleOpeners {
		if strings.HasPrefix(t.text, o) {
			return kwSchedule
		}
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
			if c.URL == "" && !t.quoted && (source.IsRoute(t.text) || c.Kind == source.KindRSSHub && strings.HasPrefix(t.text, "/")) {
				route, err := source.CleanRoute(trimURL(t.text))
				if err != nil {
					return usageErr(c.Name, CodeBadURL, "args.bad_route")
				}
				c.URL, c.Kind = source.RouteScheme+route, source.KindRSSHub
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
				return usageErr(c.Name, CodeMissingURL, "args.start_with_address_to")
			}
			return p.unexpected(t.text)
		}
		if kw == kwBefore && c.Name != "remind" {
			return p.unexpected(t.text)
		}
		if seen[kw] {
			return usageErr(c.Name, CodeDuplicate, "args.is_given_twice", t.text)
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
		return usageErr(c.Name, CodeMissingURL, "args.which_address_give_url")
	}
	if len(c.Courses) > 0 && !source.TakesToken(c.Kind) {
		return usageErr(c.Name, CodeUsage, "args.courses_go_with_course")
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
			return usageErr(c.Name, CodeBadSchedule, "args.bad_schedule", scheduleProblem(err))
		}
		c.Schedule, c.Parsed = s.String(), s
	case kwAs:
		if len(args) != 1 {
			return usageErr(c.Name, CodeBadKind, "args.which_kind", kindList("as "))
		}
		k, ok := source.ByWord(args[0])
		if !ok {
			return usageErr(c.Name, CodeBadKind, "args.unknown_kind", clip(args[0]), kindList(""))
		}
		c.Kind = k
	case kwName:
		name := strings.TrimSpace(strings.Join(args, " "))
		if name == "" {
			return usageErr(c.Name, CodeUsage, "args.give_name_after_name")
		}
		if utf8.RuneCountInString(name) > 80 {
			return usageErr(c.Name, CodeUsage, "args.name_is_too_long")
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
	text = strings.ReplaceAll(text, ideographicComma, ",")
	parts := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == ';' })
	if len(parts) == 0 {
		return usageErr("remind", CodeBadDuration, "args.give_offsets_after_before")
	}
	if len(parts) > 10 {
		return usageErr("remind", CodeBadDuration, "args.at_most_10_reminder")
	}
	var out []time.Duration
	for _, s := range parts {
		d, err := schedule.ParseDuration(s)
		if err != nil {
			return usageErr("remind", CodeBadDuration, "args.bad_offset", clip(s), scheduleProblem(err))
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b time.Duration) int { return int((b - a) / time.Minute) })
	p.cmd.Before = out
	return nil
}

// kindList names the source kinds, each after prefix, joined the way
// each language joins a list.
func kindList(prefix string) text.Localized {
	return func(lang string) string {
		return source.List(prefix, "", text.Format(lang, "list.sep"), text.Format(lang, "list.or"))
	}
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
	return strings.TrimRight(s, ideographicFullStop+fullwidthComma+ideographicComma+fullwidthSemicolon+",;")
}

// checkURL accepts absolute http(s) URLs with a host and no credentials.
// Its messages name at most the scheme or host, never the query.
func checkURL(cmd, raw string) (string, error) {
	s := trimURL(raw)
	u, err := url.Parse(s)
	if err == nil && u.Scheme != "" && !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https") {
		return "", usageErr(cmd, CodeBadURL, "args.only_http_and_https", clip(u.Scheme))
	}
	if err != nil || u.Host == "" || u.Scheme == "" {
		if strings.HasPrefix(strings.ToLower(s), "www.") {
			return "", usageErr(cmd, CodeBadURL, "args.write_full_address_starting")
		}
		return "", usageErr(cmd, CodeBadURL, "args.unreadable_url")
	}
	if u.User != nil {
		return "", usageErr(cmd, CodeBadURL, "args.password_in_url")
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
		return usageErr(c.Name, CodeUsage, "args.give_css_selector_after")
	}
	if _, err := cascadia.Compile(sel); err != nil || utf8.RuneCountInString(sel) > 200 {
		return usageErr(c.Name, CodeUsage, "args.selector_is_not_valid", clip(sel))
	}
	c.Selector = sel
	if c.Kind == "" {
		c.Kind = source.KindHTML
	}
	return nil
}
