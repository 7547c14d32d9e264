package conversation

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/tasks"
)

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
	t.courseSite(&b, tk)
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
		if g.Dir != "" {
			fmt.Fprintf(&b, t.tr("Files kept in: %s\n", "文件保存在：%s\n"), g.Dir)
		}
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
		fmt.Fprintf(&b, t.tr("Failing %d time(s) in a row: %s\n", "连续失败 %d 次：%s\n"), tk.Failures, t.runError(tk.LastError))
	}
	runs, err := t.c.o.Tasks.Runs(t.ctx, tk.ID, 5)
	if err == nil && len(runs) > 0 {
		b.WriteString(t.tr("Last runs:\n", "最近运行：\n"))
		for _, r := range runs {
			fmt.Fprintf(&b, "  %s  %s", t.when(r.Start), t.outcome(r.Outcome))
			if r.Items > 0 || r.New > 0 || r.Changed > 0 {
				fmt.Fprintf(&b, t.tr(" — %d items, %d new, %d changed", " —— %d 条，新增 %d，变更 %d"), r.Items, r.New, r.Changed)
			}
			if r.Downloads > 0 {
				fmt.Fprintf(&b, t.tr(" — %d file(s) to download", " —— 下载 %d 个文件"), r.Downloads)
			}
			if r.Selector != "" {
				fmt.Fprintf(&b, t.tr(" — entries: %s", " —— 条目：%s"), r.Selector)
			}
			if r.Skipped > 0 {
				fmt.Fprintf(&b, t.tr(" — %d unreadable line(s) skipped", " —— 跳过 %d 行无法读取的内容"), r.Skipped)
			}
			if r.Error != "" {
				fmt.Fprintf(&b, " — %s", t.runError(r.Error))
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
		if cur, gerr := t.c.o.Tasks.Get(t.ctx, id); gerr == nil && cur.Origin == tasks.OriginConfig && cur.State != tasks.Deleted && t.mayManage(cur) {
			return t.declaredInConfig(cur)
		}
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

// declaredInConfig answers /delete of a task the config file declares:
// deleting it here would last only until the next reload.
func (t *turn) declaredInConfig(tk *tasks.Task) []Reply {
	if tk.State == tasks.Paused {
		return t.reply(fmt.Sprintf("%s (%s) comes from the service's config file: deleted here, it would come back at the next reload. To delete it, remove it from the config file and reload; it stays paused meanwhile.", tk.ID, name(tk)),
			fmt.Sprintf("%s（%s）来自服务的配置文件：在这里删除，下次重新加载配置时它会回来。要删除它，请从配置文件中移除并重新加载；在此之前它保持暂停。", tk.ID, name(tk)))
	}
	return t.reply(fmt.Sprintf("%s (%s) comes from the service's config file: deleted here, it would come back at the next reload. To delete it, remove it from the config file and reload; to stop it meanwhile, /pause %s.", tk.ID, name(tk), tk.ID),
		fmt.Sprintf("%s（%s）来自服务的配置文件：在这里删除，下次重新加载配置时它会回来。要删除它，请从配置文件中移除并重新加载；在此之前可发送 /pause %s 暂停它。", tk.ID, name(tk), tk.ID))
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
		zh += "：" + t.runError(rec.Error)
	}
	return t.reply(en+".", zh+"。")
}

func outcomeZhOr(s string) string {
	if z, ok := outcomeZh[s]; ok {
		return z
	}
	return s
}
