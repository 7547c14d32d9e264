package conversation

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
)

// Course sites (README, Learning platforms): "/watch canvas <site>
// [courses 12345,678]" reads the person's courses with their own access
// token. When none is stored for the site, herald asks for it, in a
// private chat only; the message carrying it is deleted where the
// platform allows (Reply.Retract), the token goes to the credential
// store and nowhere else: not into the task, a reply, the history or a
// log (I10). "/token <site>" replaces a stored token.

// maxCourses bounds the course ids of one watch.
const maxCourses = 50

var reCourseID = regexp.MustCompile(`^[0-9]{1,12}$`)

// courses reads "courses 12345,678".
func (p *argParser) courses(args []string) error {
	text := strings.NewReplacer("、", ",", "，", ",", ";", ",").Replace(strings.Join(args, ","))
	var ids []string
	for _, id := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || isSpace(r) }) {
		if !reCourseID.MatchString(id) {
			return usageErr(p.cmd.Name, CodeUsage, fmt.Sprintf("%q is not a course id; course ids are numbers, like courses 12345,678.", clip(id)),
				fmt.Sprintf("%q 不是课程编号；课程编号是数字，例如 courses 12345,678。", clip(id)))
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 || len(ids) > maxCourses {
		return usageErr(p.cmd.Name, CodeUsage, fmt.Sprintf("Give 1 to %d course ids after courses, like courses 12345,678.", maxCourses),
			fmt.Sprintf("请在 courses 后给出 1 到 %d 个课程编号，例如 courses 12345,678。", maxCourses))
	}
	p.cmd.Courses = ids
	return nil
}

// site reads "/token <site-url> [off]".
func (p *argParser) site() error {
	if len(p.toks) == 2 && tokenOff[strings.ToLower(p.toks[1].text)] {
		p.cmd.ID = "off"
		p.toks = p.toks[:1]
	}
	if len(p.toks) != 1 || !looksLikeURL(p.toks[0].text) {
		return usageErr("token", CodeMissingURL, "Give the course site's address.", "请给出课程网站的网址。")
	}
	u, err := checkURL("token", p.toks[0].text)
	if err != nil {
		return err
	}
	p.cmd.URL = u
	return nil
}

func (t *turn) creds() *credentials.Store { return t.c.o.Credentials }

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// needToken asks for the site's token when the person has none stored
// (ok false: go on with the request).
func (t *turn) needToken(cmd Command) (replies []Reply, ok bool) {
	has, err := t.creds().Has(t.ctx, t.m.Principal, cmd.URL)
	if err != nil {
		return t.failed(err), true
	}
	if has {
		return nil, false
	}
	return t.askToken(dialog{Ask: "token", Command: cmd.Name, URL: cmd.URL, Kind: cmd.Kind, Name: cmd.TaskName,
		Selector: cmd.Selector, Before: cmd.Before, Schedule: cmd.Schedule, Courses: cmd.Courses}), true
}

// askToken asks for a token in a private chat, or says to go to one.
func (t *turn) askToken(d dialog) []Reply {
	host := hostOf(d.URL)
	if t.m.Group {
		again := "/token " + d.URL
		if d.Command != "token" {
			again = "/" + d.Command + " " + d.Kind + " " + d.URL
		}
		return t.reply(fmt.Sprintf("To read %s I need your access token, and a token must not be posted in a group. Send me %s in a private chat.", host, again),
			fmt.Sprintf("读取 %s 需要你的访问令牌，而令牌不能发在群里。请在私聊中给我发送 %s。", host, again))
	}
	if err := t.saveDialog(d); err != nil {
		return t.failed(err)
	}
	return t.reply(fmt.Sprintf("To read your courses on %s I need an access token (Canvas: Account → Settings → New access token; Moodle: Preferences → Security keys). Send it as your next message here: I delete that message where I can and keep the token only for %s, never showing it again. /cancel stops.", host, host),
		fmt.Sprintf("读取你在 %s 的课程需要访问令牌（Canvas：账户 → 设置 → 新建访问令牌；Moodle：偏好设置 → 安全密钥）。请把令牌作为下一条消息发在这里：我会尽可能删除那条消息，令牌只用于 %s，不会再显示。发送 /cancel 取消。", host, host))
}

var tokenOff = map[string]bool{"off": true, "forget": true, "delete": true, "删除": true, "忘记": true}

// token answers /token <site>: a new token for the site, asked for the
// same way; /token <site> off forgets the stored one.
func (t *turn) token(cmd Command) []Reply {
	if cmd.ID == "off" {
		if err := t.creds().Delete(t.ctx, t.m.Principal, cmd.URL); err != nil {
			return t.failed(err)
		}
		host := hostOf(cmd.URL)
		return t.reply(fmt.Sprintf("I no longer keep a token of yours for %s; your watches of it fail until you give one with /token %s.", host, cmd.URL),
			fmt.Sprintf("我已不再保存你在 %s 的令牌；在你用 /token %s 提供新令牌之前，相关关注任务会失败。", host, cmd.URL))
	}
	return t.askToken(dialog{Ask: "token", Command: "token", URL: cmd.URL})
}

// takeToken takes the answer to the token question. The message is a
// secret whatever it says: it is never kept in history, and the channel
// deletes it.
func (t *turn) takeToken(d dialog, text string) []Reply {
	t.secret = true
	retract := func(r []Reply) []Reply {
		r[0].Retract = true
		r[0].Unretracted = t.tr("I could not delete the message with your token here; please delete it yourself.",
			"我无法删除这条带有令牌的消息；请你自己删除（撤回）它。")
		return r
	}
	if t.m.Group { // a dialog is only ever opened in a private chat
		t.clearDialog()
		return retract(t.reply("A token must not be posted in a group; send it to me in a private chat.", "令牌不能发在群里；请私聊发给我。"))
	}
	tok := strings.TrimSpace(text)
	if !plausibleToken(tok) {
		if err := t.saveDialog(d); err != nil {
			return t.failed(err)
		}
		return retract(t.reply("That does not look like an access token (one word, no spaces). Send the token, or /cancel.",
			"这看起来不像访问令牌（应为一串不含空格的字符）。请发送令牌，或发送 /cancel 取消。"))
	}
	if err := t.creds().Put(t.ctx, t.m.Principal, d.URL, tok); err != nil {
		return retract(t.failed(err))
	}
	t.clearDialog()
	host := hostOf(d.URL)
	out := retract(t.reply(fmt.Sprintf("Thanks: the token for %s is stored and will not be shown again.", host),
		fmt.Sprintf("谢谢：%s 的令牌已保存，不会再显示。", host)))
	if d.Command == "token" {
		return append(out, t.reply(fmt.Sprintf("Your watches of %s use it from their next check.", host),
			fmt.Sprintf("你在 %s 的关注任务下次检查时就会使用它。", host))...)
	}
	return append(out, t.request(Command{Name: d.Command, URL: d.URL, Kind: d.Kind, TaskName: d.Name, Selector: d.Selector,
		Before: d.Before, Schedule: d.Schedule, Courses: d.Courses})...)
}

// plausibleToken: one printable ASCII word of 8 to credentials.MaxToken bytes.
func plausibleToken(s string) bool {
	if len(s) < 8 || len(s) > credentials.MaxToken {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r > '~' {
			return false
		}
	}
	return !strings.Contains(s, "://")
}

// looksLikeStrayToken: a lone long word mixing letters and digits, the
// shape of an access token sent when no question was waiting for one. It
// is neither kept nor passed on to the assistant.
func looksLikeStrayToken(s string) bool {
	if len(s) < 24 || !plausibleToken(s) {
		return false
	}
	letters, digits := false, false
	for _, r := range s {
		letters = letters || unicode.IsLetter(r)
		digits = digits || unicode.IsDigit(r)
	}
	return letters && digits
}

// strayToken answers a token sent with no question waiting for it.
func (t *turn) strayToken() []Reply {
	t.secret = true
	return []Reply{{Text: t.tr("That looks like an access token, and I was not waiting for one, so I did not keep it. To give a course site's token, start with /watch canvas <site> or /token <site>.",
		"这看起来像访问令牌，但我没有在等待令牌，所以没有保存。要提供课程网站的令牌，请先发送 /watch canvas <网站> 或 /token <网站>。"),
		Retract: true, Unretracted: t.tr("I could not delete that message; please delete it yourself.", "我无法删除那条消息；请你自己删除（撤回）它。")}}
}

// courseSite adds a course site's courses and where its token comes
// from to /task: never the token.
func (t *turn) courseSite(b *strings.Builder, tk *tasks.Task) {
	if len(tk.Source.Courses) > 0 {
		fmt.Fprintf(b, t.tr("Courses: %s\n", "课程：%s\n"), strings.Join(tk.Source.Courses, ", "))
	}
	switch {
	case tk.Source.TokenFrom != "":
		b.WriteString(t.tr("Access token: the owner's own, given in chat and stored for this site (never shown; the owner's /token <site> replaces it)\n",
			"访问令牌：创建者本人在聊天中提供，已为该网站保存（从不显示；创建者发送 /token <网站> 可更换）\n"))
	case tk.Source.Token != "":
		b.WriteString(t.tr("Access token: from the config file (not shown)\n", "访问令牌：来自配置文件（不显示）\n"))
	}
}

// takesToken reports whether cmd watches a course site.
func takesToken(cmd Command) bool { return source.TakesToken(cmd.Kind) }
