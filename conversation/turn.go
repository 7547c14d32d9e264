package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/schedule"
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
}

func (t *turn) zh() bool { return t.lang == "zh" }

// tr picks the text of the turn's language.
func (t *turn) tr(en, zh string) string {
	if t.zh() {
		return zh
	}
	return en
}

func (t *turn) reply(en, zh string) []Reply { return []Reply{{Text: t.tr(en, zh)}} }

func (t *turn) run() []Reply {
	if t.m.Button != nil {
		return t.press(*t.m.Button)
	}
	cmd, err := Parse(t.m.Text, t.c.o.BotName, t.c.zone())
	if errors.Is(err, ErrNotCommand) {
		return t.plain()
	}
	if !cmd.Addressed {
		return nil
	}
	if cmd.Name == "inbox" && len(cmd.Args) == 1 && (strings.EqualFold(cmd.Args[0], "token") || cmd.Args[0] == "令牌") {
		t.clearDialog()
		return t.inboxToken()
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		return t.reply(pe.En, pe.Zh)
	}
	if err != nil {
		return t.reply("I could not read that command. Send /help to see what I can do.", "无法理解这条命令。发送 /help 查看可用命令。")
	}
	// A new command supersedes a pending question.
	had := t.clearDialog()
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
		return t.decide(cmd.ID, true, "", false)
	case "reject":
		return t.decide(cmd.ID, false, cmd.Reason, false)
	case "inbox":
		return t.inbox()
	case "read":
		return t.read(cmd.ID)
	case "mute":
		return t.mute(cmd.ID, cmd.Duration)
	case "quiet":
		return t.quiet(cmd.Quiet)
	case "cancel":
		if had {
			return t.reply("Cancelled.", "已取消。")
		}
		return t.reply("Nothing to cancel.", "没有进行中的对话。")
	}
	return t.reply("Send /help to see what I can do.", "发送 /help 查看可用命令。")
}

// ---------------------------------------------------------------- plain text and dialogs

// plain answers text that is not a command: the answer to a pending
// question, else the assistant's reading when one is configured, else a
// short help.
func (t *turn) plain() []Reply {
	text := strings.TrimSpace(t.m.Text)
	d, ok := t.dialog()
	if ok {
		return t.answer(d, text)
	}
	if text == "" {
		return nil
	}
	if a, perHour := t.c.currentAssistant(); a != nil {
		return t.assist(a, perHour, text)
	}
	return []Reply{{Text: t.plainHelp()}}
}

// dialog is a question waiting for its answer in one chat, from one person.
type dialog struct {
	Ask     string          `json:"ask"` // schedule | confirm (an assistant's draft)
	Command string          `json:"command"`
	URL     string          `json:"url"`
	Kind    string          `json:"kind,omitempty"`
	Name    string          `json:"name,omitempty"`
	Before  []time.Duration `json:"before,omitempty"`
	// Schedule and Token belong to a draft: its schedule ("" asks) and
	// the id its buttons carry.
	Schedule string    `json:"schedule,omitempty"`
	Token    string    `json:"token,omitempty"`
	Expires  time.Time `json:"expires"`
}

func (t *turn) dialogKey() string { return "dialog/" + t.m.Chat + "|" + t.m.Principal }

func (t *turn) dialog() (dialog, bool) {
	var d dialog
	b, err := t.c.o.Store.Dialogs().Get(t.ctx, t.dialogKey())
	if err != nil {
		return d, false
	}
	if json.Unmarshal(b, &d) != nil || !t.c.o.Now().Before(d.Expires) {
		return d, false
	}
	return d, true
}

func (t *turn) saveDialog(d dialog) error {
	d.Expires = t.c.o.Now().Add(DialogTTL)
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return t.c.o.Store.Dialogs().Put(t.ctx, t.dialogKey(), b, DialogTTL)
}

// clearDialog drops the pending question, reporting whether there was one.
func (t *turn) clearDialog() bool {
	b, err := t.c.o.Store.Dialogs().Get(t.ctx, t.dialogKey())
	if err != nil {
		return false // none (or expired): nothing to write
	}
	var d dialog
	had := json.Unmarshal(b, &d) == nil && t.c.o.Now().Before(d.Expires)
	if err := t.c.o.Store.Dialogs().Delete(t.ctx, t.dialogKey()); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.c.log.Warn().Err(err).Msg("cannot clear dialog state")
	}
	return had
}

var yes = map[string]bool{"": true, "ok": true, "okay": true, "yes": true, "y": true, "sure": true, "default": true,
	"好": true, "好的": true, "是": true, "行": true, "可以": true, "默认": true, "嗯": true}

// answer takes the reply to a pending question.
func (t *turn) answer(d dialog, text string) []Reply {
	switch d.Ask {
	case "schedule":
		sched := DefaultSchedule
		if !yes[strings.ToLower(strings.Trim(text, " .!。！"))] {
			s, err := parseScheduleAnswer(text, t.c.zone())
			if err != nil {
				if serr := t.saveDialog(d); serr != nil {
					return t.failed(serr)
				}
				return t.reply(
					"That schedule doesn't work: "+err.Error()+". Reply like every 1h or daily 08:00 (ok for every 1h), or /cancel.",
					"时间安排无效："+err.Error()+"。请回复如 every 1h 或 daily 08:00（回复“好”即每小时一次），或发送 /cancel 取消。")
			}
			sched = s
		}
		t.clearDialog()
		return t.submit(Command{Name: d.Command, URL: d.URL, Kind: d.Kind, TaskName: d.Name, Before: d.Before, Schedule: sched})
	case "confirm":
		return t.answerDraft(d, text)
	}
	t.clearDialog()
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
	var pe *schedule.ParseError
	if errors.As(first, &pe) {
		return "", errors.New(pe.Msg)
	}
	return "", errors.New("I could not read it")
}

// ---------------------------------------------------------------- requests

func (t *turn) request(cmd Command) []Reply {
	if cmd.Name == "remind" && len(cmd.Before) == 0 {
		cmd.Before = defaultBefore
	}
	if cmd.Schedule == "" && cmd.Name == "watch" {
		d := dialog{Ask: "schedule", Command: cmd.Name, URL: cmd.URL, Kind: cmd.Kind, Name: cmd.TaskName, Before: cmd.Before}
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
	sub := tasks.Submission{
		Principal: t.m.Principal, By: clipName(t.m.Name), ReplyTo: t.replyTo(), Lang: t.lang, URL: cmd.URL, Kind: cmd.Kind,
		Schedule: cmd.Schedule, Name: cmd.TaskName, Notify: t.notifyFor(),
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

// ShowURL renders a source URL for chat: scheme, host and path; a query
// or fragment is elided (it may carry a token).
func ShowURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(address)"
	}
	s := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" || u.Fragment != "" {
		s += "?…"
	}
	return s
}

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

// ---------------------------------------------------------------- task commands

func (t *turn) list() []Reply {
	list, err := t.c.o.Tasks.List(t.ctx, t.m.Principal)
	if err != nil {
		return t.failed(err)
	}
	if len(list) == 0 {
		return t.reply("You have no tasks. Start one with /watch <url>.", "你还没有任务。用 /watch <网址> 创建一个。")
	}
	var b strings.Builder
	admin := t.c.o.Tasks.Policy().IsAdmin(t.m.Principal)
	if admin {
		b.WriteString(t.tr("All tasks:\n", "全部任务：\n"))
	} else {
		b.WriteString(t.tr("Your tasks:\n", "你的任务：\n"))
	}
	const most = 30
	for i, tk := range list {
		if i == most {
			fmt.Fprintf(&b, t.tr("… and %d more\n", "……还有 %d 个\n"), len(list)-most)
			break
		}
		next := t.when(tk.NextRun)
		if tk.State != tasks.Active {
			next = "—"
		}
		line := fmt.Sprintf("%s  %s  [%s]  ", tk.ID, name(tk), t.state(tk.State))
		if tk.State == tasks.PendingApproval {
			line += fmt.Sprintf(t.tr("request %s", "申请 %s"), tk.Request.ID)
		} else {
			line += fmt.Sprintf(t.tr("next %s, last %s", "下次 %s，上次 %s"), next, t.outcome(tk.LastOutcome))
		}
		if admin && tk.Owner != t.m.Principal {
			line += fmt.Sprintf(t.tr(" (owner %s)", "（所有者 %s）"), tk.Owner)
		}
		b.WriteString(line + "\n")
	}
	return []Reply{{Text: strings.TrimRight(b.String(), "\n")}}
}

// name is a task's display name: its name, else its source's host.
func name(tk *tasks.Task) string {
	if tk.Name != "" {
		return tk.Name
	}
	if u, err := url.Parse(tk.Source.URL); err == nil && u.Host != "" {
		return u.Host + u.EscapedPath()
	}
	return tk.ID
}

func (t *turn) mayManage(tk *tasks.Task) bool {
	return tk.Owner == t.m.Principal || t.c.o.Tasks.Policy().IsAdmin(t.m.Principal)
}

func (t *turn) show(id string) []Reply {
	tk, err := t.c.o.Tasks.Get(t.ctx, id)
	if err != nil {
		return t.failed(err)
	}
	if !t.mayManage(tk) {
		return t.reply("Only the task's owner or an admin can see it.", "只有任务的创建者或管理员可以查看。")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s [%s]\n", tk.ID, name(tk), t.state(tk.State))
	kind := tk.Source.Kind
	if kind == "" {
		kind = t.tr("detected", "自动识别")
	}
	fmt.Fprintf(&b, t.tr("Source: %s (%s)\n", "来源：%s（%s）\n"), ShowURL(tk.Source.URL), kind)
	fmt.Fprintf(&b, t.tr("Schedule: %s", "检查频率：%s"), t.schedule(tk.Schedule))
	if len(tk.RemindBefore) > 0 {
		fmt.Fprintf(&b, t.tr("; reminders %s before due", "；截止前 %s 提醒"), durations(tk.RemindBefore))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, t.tr("Notify: %s\n", "通知：%s\n"), t.recipients(tk))
	fmt.Fprintf(&b, t.tr("Owner: %s; request %s\n", "创建者：%s；申请 %s\n"), tk.Owner, tk.Request.ID)
	if g := tk.Grant; g != nil {
		fmt.Fprintf(&b, t.tr("Approved scope: %s on %s%s, by %s (%s)\n", "批准范围：%s，%s%s，由 %s 批准（%s）\n"),
			strings.Join(g.Operations, "+"), g.Host, g.PathPrefix, who(g.By, t), g.Basis)
	} else if d := tk.Decision; d != nil && !d.Approved {
		fmt.Fprintf(&b, t.tr("Rejected by %s", "被 %s 拒绝"), who(d.By, t))
		if d.Reason != "" {
			fmt.Fprintf(&b, t.tr(": %s", "：%s"), d.Reason)
		}
		b.WriteString("\n")
	}
	if tk.State == tasks.Active {
		fmt.Fprintf(&b, t.tr("Next run: %s\n", "下次运行：%s\n"), t.when(tk.NextRun))
	}
	if tk.LastError != "" && tk.Failures > 0 {
		fmt.Fprintf(&b, t.tr("Failing %d time(s) in a row: %s\n", "连续失败 %d 次：%s\n"), tk.Failures, Redact(tk.LastError))
	}
	runs, err := t.c.o.Tasks.Runs(t.ctx, tk.ID, 5)
	if err == nil && len(runs) > 0 {
		b.WriteString(t.tr("Last runs:\n", "最近运行：\n"))
		for _, r := range runs {
			fmt.Fprintf(&b, "  %s  %s", t.when(r.Start), t.outcome(r.Outcome))
			if r.Items > 0 || r.New > 0 || r.Changed > 0 {
				fmt.Fprintf(&b, t.tr(" — %d items, %d new, %d changed", " —— %d 条，新增 %d，变更 %d"), r.Items, r.New, r.Changed)
			}
			if r.Error != "" {
				fmt.Fprintf(&b, " — %s", Redact(r.Error))
			}
			b.WriteString("\n")
		}
	}
	return []Reply{{Text: strings.TrimRight(b.String(), "\n")}}
}

func who(p string, t *turn) string {
	if p == "" {
		return t.tr("an admin", "管理员")
	}
	return p
}

func (t *turn) transition(op, id string) []Reply {
	var tk *tasks.Task
	var err error
	switch op {
	case "pause":
		tk, err = t.c.o.Tasks.Pause(t.ctx, t.m.Principal, id)
	case "resume":
		tk, err = t.c.o.Tasks.Resume(t.ctx, t.m.Principal, id)
	default:
		tk, err = t.c.o.Tasks.Delete(t.ctx, t.m.Principal, id)
	}
	if err != nil {
		return t.failed(err)
	}
	switch op {
	case "pause":
		return t.reply(fmt.Sprintf("Paused %s (%s). /resume %s starts it again.", tk.ID, name(tk), tk.ID),
			fmt.Sprintf("已暂停 %s（%s）。发送 /resume %s 恢复。", tk.ID, name(tk), tk.ID))
	case "resume":
		return t.reply(fmt.Sprintf("Resumed %s (%s); it checks again now.", tk.ID, name(tk)),
			fmt.Sprintf("已恢复 %s（%s），马上重新检查。", tk.ID, name(tk)))
	}
	return t.reply(fmt.Sprintf("Deleted %s (%s). Its history stays readable with /task %s.", tk.ID, name(tk), tk.ID),
		fmt.Sprintf("已删除 %s（%s）。仍可用 /task %s 查看历史。", tk.ID, name(tk), tk.ID))
}

func (t *turn) runNow(id string) []Reply {
	rec, err := t.c.o.Tasks.RunNow(t.ctx, t.m.Principal, id)
	if err != nil {
		return t.failed(err)
	}
	en := fmt.Sprintf("Checked %s: %s, %d items", rec.TaskID, t.outcome(rec.Outcome), rec.Items)
	zh := fmt.Sprintf("已检查 %s：%s，共 %d 条", rec.TaskID, outcomeZhOr(rec.Outcome), rec.Items)
	if rec.New+rec.Changed+rec.Removed > 0 {
		en += fmt.Sprintf(" (%d new, %d changed, %d removed)", rec.New, rec.Changed, rec.Removed)
		zh += fmt.Sprintf("（新增 %d，变更 %d，移除 %d）", rec.New, rec.Changed, rec.Removed)
	}
	if rec.Error != "" {
		en += ": " + Redact(rec.Error)
		zh += "：" + Redact(rec.Error)
	}
	return t.reply(en+".", zh+"。")
}

func outcomeZhOr(s string) string {
	if z, ok := outcomeZh[s]; ok {
		return z
	}
	return s
}

// ---------------------------------------------------------------- approvals

// decide approves or rejects a request, typed or pressed.
func (t *turn) decide(id string, approve bool, reason string, pressed bool) []Reply {
	if !t.c.o.Tasks.Policy().IsAdmin(t.m.Principal) {
		en, zh := "Only an admin can approve requests.", "只有管理员可以批准申请。"
		if !approve {
			en, zh = "Only an admin can reject requests.", "只有管理员可以拒绝申请。"
		}
		if pressed {
			return []Reply{{Toast: t.tr(en, zh)}}
		}
		return t.reply(en, zh)
	}
	var tk *tasks.Task
	var err error
	if approve {
		tk, err = t.c.o.Tasks.Approve(t.ctx, t.m.Principal, id)
	} else {
		tk, err = t.c.o.Tasks.Reject(t.ctx, t.m.Principal, id, reason)
	}
	if err != nil {
		msg := t.errText(err)
		if pressed {
			return []Reply{{Text: msg, Edit: true, Toast: msg}}
		}
		return []Reply{{Text: msg}}
	}
	var text, toast string
	if approve {
		text = t.tr(fmt.Sprintf("Approved %s by %s: task %s (%s) is active.", tk.Request.ID, t.m.Principal, tk.ID, name(tk)),
			fmt.Sprintf("%s 已由 %s 批准：任务 %s（%s）已启用。", tk.Request.ID, t.m.Principal, tk.ID, name(tk)))
		toast = t.tr("Approved", "已批准")
	} else {
		text = t.tr(fmt.Sprintf("Rejected %s by %s (%s).", tk.Request.ID, t.m.Principal, name(tk)),
			fmt.Sprintf("%s 已由 %s 拒绝（%s）。", tk.Request.ID, t.m.Principal, name(tk)))
		toast = t.tr("Rejected", "已拒绝")
	}
	if pressed {
		return []Reply{{Text: text, Edit: true, Toast: toast}}
	}
	return []Reply{{Text: text}}
}

// press answers a button.
func (t *turn) press(p Press) []Reply {
	switch p.Action {
	case "approve", "reject":
		if !validID(p.Arg) {
			return []Reply{{Toast: t.tr("This button is no longer valid.", "此按钮已失效。")}}
		}
		return t.decide(p.Arg, p.Action == "approve", "", true)
	case actionDraftSend, actionDraftDrop:
		return t.pressDraft(p)
	}
	return []Reply{{Toast: t.tr("This button is no longer valid.", "此按钮已失效。")}}
}

// ---------------------------------------------------------------- inbox

func (t *turn) inbox() []Reply {
	inbox := t.c.o.Store.Inbox()
	items, err := inbox.List(t.ctx, t.m.Principal, store.InboxQuery{Limit: 10, UnreadOnly: true})
	if err != nil {
		return t.failed(err)
	}
	if len(items) == 0 {
		return t.reply("Your inbox has nothing unread.", "收件箱里没有未读消息。")
	}
	n, _ := inbox.Unread(t.ctx, t.m.Principal)
	var b strings.Builder
	fmt.Fprintf(&b, t.tr("Unread (%d), newest first:\n", "未读（%d 条），最新在前：\n"), n)
	for _, it := range items {
		title := it.Title
		if len([]rune(title)) > 80 {
			title = string([]rune(title)[:80]) + "…"
		}
		fmt.Fprintf(&b, "%s  %s  %s\n", it.ID, t.when(it.CreatedAt), title)
	}
	b.WriteString(t.tr("/read <id> or /read all marks them read.", "发送 /read <编号> 或 /read all 标记为已读。"))
	return []Reply{{Text: b.String()}}
}

func (t *turn) read(id string) []Reply {
	target := id
	if id == "all" {
		target = ""
	}
	n, err := t.c.o.Store.Inbox().MarkRead(t.ctx, t.m.Principal, target)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return t.failed(err)
	}
	if n == 0 {
		if id == "all" {
			return t.reply("Nothing was unread.", "没有未读消息。")
		}
		return t.reply(fmt.Sprintf("There is no unread item %s in your inbox; see /inbox.", id),
			fmt.Sprintf("收件箱里没有未读的 %s；发送 /inbox 查看。", id))
	}
	return t.reply(fmt.Sprintf("Marked %d read.", n), fmt.Sprintf("已将 %d 条标记为已读。", n))
}

// inboxToken issues an inbox API token, in private only.
func (t *turn) inboxToken() []Reply {
	if t.c.o.Tokens == nil {
		return t.reply("Inbox tokens are not available here.", "此处不提供收件箱令牌。")
	}
	private := ChatOf(t.m.Principal)
	if t.m.Group && (private == "" || t.c.sender(private) == nil) {
		return t.reply("Ask me for an inbox token in a private chat.", "请在私聊中向我申请收件箱令牌。")
	}
	tok, err := t.c.o.Tokens.Issue(t.ctx, t.m.Principal)
	if err != nil {
		return t.failed(err)
	}
	text := t.tr("Your inbox API token (keep it secret; it reads your inbox):\n"+tok+"\nUse it as: Authorization: Bearer <token> on GET /api/v1/inbox",
		"你的收件箱 API 令牌（请保密，它可以读取你的收件箱）：\n"+tok+"\n用法：GET /api/v1/inbox，请求头 Authorization: Bearer <令牌>")
	if !t.m.Group {
		return []Reply{{Text: text}}
	}
	if err := t.c.say(t.ctx, private, Reply{Text: text}); err != nil {
		return t.reply("I could not reach you in private; start a private chat with me and ask again.", "无法私聊你；请先和我私聊再申请。")
	}
	return t.reply("I sent you an inbox token in a private chat.", "已通过私聊发送收件箱令牌。")
}

// ---------------------------------------------------------------- prefs

func (t *turn) mute(id string, d time.Duration) []Reply {
	if _, err := t.c.o.Tasks.Get(t.ctx, id); err != nil {
		return t.failed(err)
	}
	until := t.c.o.Now().Add(d)
	err := t.c.o.Prefs.Update(t.ctx, t.m.Chat, func(p *delivery.Prefs) {
		if d <= 0 {
			delete(p.Mutes, id)
			return
		}
		if p.Mutes == nil {
			p.Mutes = map[string]time.Time{}
		}
		p.Mutes[id] = until
	})
	if err != nil {
		return t.failed(err)
	}
	if d <= 0 {
		return t.reply(fmt.Sprintf("%s is no longer muted here; held pushes arrive now.", id), fmt.Sprintf("已取消 %s 的静音；暂存的推送马上送达。", id))
	}
	return t.reply(fmt.Sprintf("Muted %s here until %s; its pushes wait and arrive after, once.", id, t.when(until)),
		fmt.Sprintf("已在此静音 %s 至 %s；期间的推送会暂存，之后送达一次。", id, t.when(until)))
}

func (t *turn) quiet(q string) []Reply {
	err := t.c.o.Prefs.Update(t.ctx, t.m.Chat, func(p *delivery.Prefs) {
		if q == "off" {
			p.Quiet = ""
			return
		}
		p.Quiet = q
		if p.Zone == "" {
			p.Zone = t.c.zone().String()
		}
	})
	if err != nil {
		return t.failed(err)
	}
	if q == "off" {
		return t.reply("Quiet hours are off for this chat.", "已关闭本聊天的免打扰时段。")
	}
	return t.reply(fmt.Sprintf("Quiet hours %s (%s) set for this chat; pushes in that time wait and arrive after, once. Deadline reminders due within 2 hours still come.", q, t.c.zone()),
		fmt.Sprintf("已为本聊天设置免打扰 %s（%s）；期间的推送会暂存，之后送达一次。2 小时内截止的提醒仍会送达。", q, t.c.zone()))
}

// ---------------------------------------------------------------- help

func (t *turn) help() []Reply {
	if t.zh() {
		return []Reply{{Text: `我可以帮你关注网页、订阅源和日历，有变化时通知你。
/watch <网址> [every 30m | daily 08:00] [as rss|ical|json|html] [name 名称] — 申请关注，例如 /watch https://news.example.edu/feed.xml every 1h
/remind <日历网址> [before 72h,24h,2h] — 截止提醒
/tasks — 我的任务（管理员：全部）
/task <编号> — 详情、范围、最近运行
/pause /resume /delete /run <编号> — 管理任务
/approve /reject <申请编号> — 管理员审批
/inbox — 未读消息；/inbox token — 获取收件箱 API 令牌；/read <编号|all>
/mute <任务编号> <时长|off> — 静音；/quiet <22:00-07:00|off> — 免打扰
/cancel — 取消当前对话`}}
	}
	return []Reply{{Text: `I watch web pages, feeds and calendars and tell you what changed.
/watch <url> [every 30m | daily 08:00] [as rss|ical|json|html] [name text] — request a watch, e.g. /watch https://news.example.edu/feed.xml every 1h
/remind <calendar url> [before 72h,24h,2h] — deadline reminders
/tasks — my tasks (admins: all)
/task <id> — details, scope, last runs
/pause /resume /delete /run <id> — manage a task
/approve /reject <request-id> — admins decide requests
/inbox — unread items; /inbox token — an inbox API token; /read <id|all>
/mute <task-id> <duration|off> — mute a task here; /quiet <22:00-07:00|off> — quiet hours
/cancel — cancel the question in progress`}}
}
