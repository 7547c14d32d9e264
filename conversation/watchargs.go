package conversation

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

// clause keywords of /watch and /remind.
const (
	kwSchedule = "schedule"
	kwAs       = "as"
	kwName     = "name"
	kwBefore   = "before"
)

var keywords = map[string]string{
	"every": kwSchedule, "daily": kwSchedule, "at": kwSchedule, "cron": kwSchedule,
	"as": kwAs, "kind": kwAs, "type": kwAs, "类型": kwAs, "格式": kwAs,
	"name": kwName, "named": kwName, "名称": kwName, "名字": kwName,
	"before": kwBefore, "提前": kwBefore,
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
			msg := "that local time does not exist in its zone"
			var pe *schedule.ParseError
			if errors.As(err, &pe) {
				msg = pe.Msg
			}
			return usageErr(c.Name, CodeBadSchedule, "That schedule doesn't work: "+msg+".", "时间安排无效："+msg+"。")
		}
		c.Schedule = s.String()
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
			msg := err.Error()
			var pe *schedule.ParseError
			if errors.As(err, &pe) {
				msg = pe.Msg
			}
			return usageErr("remind", CodeBadDuration,
				fmt.Sprintf("Reminder offset %q doesn't work: %s.", clip(s), msg),
				fmt.Sprintf("提醒时间 %q 无效：%s。", clip(s), msg))
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
