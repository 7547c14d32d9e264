package conversation

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

func (t *turn) request(cmd Command) []Reply {
	if cmd.Name == "remind" && len(cmd.Before) == 0 {
		cmd.Before = defaultBefore
	}
	if takesToken(cmd) {
		if r, asked := t.needToken(cmd); asked {
			return r
		}
	}
	if cmd.Schedule == "" && cmd.Name == "watch" {
		d := dialog{Ask: "schedule", Command: cmd.Name, URL: cmd.URL, Kind: cmd.Kind, Selector: cmd.Selector, Name: cmd.TaskName, Before: cmd.Before, Courses: cmd.Courses}
		if err := t.saveDialog(d); err != nil {
			return t.failed(err)
		}
		return t.reply(
			"How often should I check? e.g. every 1h (default), daily 08:00. Reply ok for the default, or /cancel.",
			"多久检查一次？例如 every 1h（默认）、daily 08:00。回复“好”使用默认值，或发送 /cancel 取消。")
	}
	return t.submit(cmd)
}

// clipName keeps a display name short and on one line.
func clipName(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return s
}

// replyTo is the chat the manager may push the task's own notices to
// (baseline, failures): this chat when delivery can reach it. A console
// chat cannot receive pushes; its notices go to the requester's inbox and
// the decision reaches the console through ChatOf(owner).
func (t *turn) replyTo() string {
	if _, err := delivery.ParseAddress(t.m.Chat); err == nil {
		return t.m.Chat
	}
	return ""
}

// notifyFor is where a chat request's pushes go: this chat when it can
// receive pushes, else the requester's inbox.
func (t *turn) notifyFor() []string {
	if _, err := delivery.ParseAddress(t.m.Chat); err == nil {
		return []string{t.m.Chat}
	}
	return []string{address.InboxOf(t.m.Principal)}
}

func (t *turn) submit(cmd Command) []Reply {
	at := cmd.Parsed
	if at == nil { // given in a dialog
		if s, err := schedule.Parse(cmd.Schedule, time.UTC); err == nil {
			at = s
		}
	}
	if at != nil && at.Kind() == schedule.KindAt {
		if _, err := at.Next(t.c.o.Now()); err != nil {
			return t.reply("That time has already passed; give a time in the future, like at 2027-01-15 09:00.",
				"这个时间已经过去了；请给出将来的时间，例如 at 2027-01-15 09:00。")
		}
	}
	sub := tasks.Submission{
		Principal: t.m.Principal, By: clipName(t.m.Name), ReplyTo: t.replyTo(), Lang: t.lang, URL: cmd.URL, Kind: cmd.Kind, Selector: cmd.Selector,
		Schedule: cmd.Schedule, Parsed: cmd.Parsed, Name: cmd.TaskName, Notify: t.notifyFor(),
		Courses: cmd.Courses, StoredToken: takesToken(cmd),
	}
	if cmd.Name == "remind" {
		sub.RemindBefore = cmd.Before
	}
	tk, err := t.c.o.Tasks.Submit(t.ctx, sub)
	if err != nil {
		return t.failed(err)
	}
	return []Reply{{Text: t.summary(tk)}}
}

// summary says what a request covers and where it stands.
func (t *turn) summary(tk *tasks.Task) string {
	u, _ := url.Parse(tk.Source.URL)
	host := ""
	if u != nil {
		host = u.Hostname()
	}
	var b strings.Builder
	what := t.tr("watch", "关注")
	if len(tk.RemindBefore) > 0 {
		what = t.tr("deadline reminders from", "截止提醒：")
	}
	label := tk.Request.ID
	if tk.Name != "" {
		label += " (" + tk.Name + ")"
	}
	fmt.Fprintf(&b, t.tr("Request %s: %s %s (host %s).\n", "申请 %s：%s %s（主机 %s）。\n"), label, what, ShowURL(tk.Source.URL), host)
	fmt.Fprintf(&b, t.tr("How often: %s", "检查频率：%s"), t.schedule(tk.Schedule))
	if len(tk.RemindBefore) > 0 {
		fmt.Fprintf(&b, t.tr("; reminders %s before each due time", "；在截止前 %s 提醒"), durations(tk.RemindBefore))
	}
	b.WriteString(t.tr(".\n", "。\n"))
	if tk.Source.Kind != "" {
		fmt.Fprintf(&b, t.tr("Kind: %s.\n", "类型：%s。\n"), tk.Source.Kind)
		if tk.Source.Kind == source.KindHTML {
			if tk.Source.Selector != "" {
				fmt.Fprintf(&b, t.tr("Entries: the elements matching %s.\n", "条目：匹配 %s 的元素。\n"), tk.Source.Selector)
			} else {
				b.WriteString(t.tr("Entries: the page's repeated list of entries, picked at the first check (/task shows the selector chosen).\n",
					"条目：第一次检查时从页面中重复出现的列表自动选取（/task 会显示所选的选择器）。\n"))
			}
		}
	} else {
		b.WriteString(t.tr("Kind: detected from the content.\n", "类型：根据内容自动识别。\n"))
	}
	fmt.Fprintf(&b, t.tr("Who will be told: %s.\n", "通知对象：%s。\n"), t.recipients(tk))
	switch tk.State {
	case tasks.Active:
		fmt.Fprintf(&b, t.tr("Approved — task %s starts now; the first check only sets a baseline.", "已批准——任务 %s 现在开始；第一次检查只建立基线，不会推送旧内容。"), tk.ID)
	case tasks.PendingApproval:
		b.WriteString(t.tr("It awaits an admin's approval; I'll tell you here when it is decided.", "等待管理员批准；有结果时我会在这里告诉你。"))
		if host != "" && !t.c.o.Tasks.Policy().HostAllowed(host) {
			fmt.Fprintf(&b, t.tr("\nThat URL's host %s is not in the allowed list; an admin can approve it with /approve %s",
				"\n该网址的主机 %s 不在允许列表中；管理员可以用 /approve %s 批准。"), host, tk.Request.ID)
		}
	default:
		fmt.Fprintf(&b, t.tr("State: %s.", "状态：%s。"), t.state(tk.State))
	}
	return b.String()
}

func (t *turn) recipients(tk *tasks.Task) string {
	parts := make([]string, 0, len(tk.Notify))
	for _, r := range tk.Notify {
		parts = append(parts, t.recipient(tk, r))
	}
	return strings.Join(parts, t.tr(", ", "、"))
}

func (t *turn) recipient(tk *tasks.Task, r string) string {
	switch {
	case r == t.m.Chat:
		return t.tr("this chat", "本聊天")
	case r == tk.ReplyTo && r != "":
		return t.tr("the requesting chat", "申请所在的聊天")
	case r == address.InboxOf(t.m.Principal):
		return t.tr("your inbox (/inbox)", "你的收件箱（/inbox）")
	case address.IsInbox(r):
		return t.tr("an inbox", "一个收件箱")
	case delivery.IsLiteral(r):
		return t.tr("another chat", "另一个聊天")
	}
	return r // a named recipient: its name is not an address
}

// ShowURL renders a source URL for chat (source.ShowURL): scheme, host
// and path; a query or fragment is elided (it may carry a token).
func ShowURL(raw string) string { return source.ShowURL(raw) }

func durations(ds []time.Duration) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, shortDuration(d))
	}
	return strings.Join(parts, ", ")
}

func shortDuration(d time.Duration) string {
	switch {
	case d >= 7*24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func (t *turn) schedule(s string) string {
	if !t.zh() {
		return s
	}
	switch {
	case strings.HasPrefix(s, "every "):
		return "每 " + strings.TrimPrefix(s, "every ")
	case strings.HasPrefix(s, "daily "):
		return "每天 " + strings.TrimPrefix(s, "daily ")
	case strings.HasPrefix(s, "at "):
		return "于 " + strings.TrimPrefix(s, "at ")
	}
	return s
}

func (t *turn) state(s tasks.State) string {
	w := tasks.StateText(s)
	if t.zh() {
		return w.Zh
	}
	return w.En
}

var outcomeZh = map[string]string{
	tasks.OutcomeOK: "正常", tasks.OutcomeBaseline: "已建立基线", tasks.OutcomeUnchanged: "无变化", tasks.OutcomeSuspect: "可疑（待确认）",
	tasks.OutcomeFailed: "失败", tasks.OutcomeRejected: "未提交", tasks.OutcomeCancelled: "已取消", tasks.OutcomeInterrupted: "被中断",
}

func (t *turn) outcome(s string) string {
	if s == "" {
		return t.tr("none yet", "暂无")
	}
	if t.zh() {
		if z, ok := outcomeZh[s]; ok {
			return z
		}
	}
	return s
}

func (t *turn) when(at time.Time) string {
	if at.IsZero() {
		return "—"
	}
	return at.In(t.c.zone()).Format("2006-01-02 15:04")
}
