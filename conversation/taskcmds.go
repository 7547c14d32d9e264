package conversation

import (
	"cmp"
	"fmt"
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
)

func (t *turn) list() []Reply {
	list, err := t.c.o.Tasks.List(t.ctx, t.m.Principal)
	if err != nil {
		return t.failed(err)
	}
	if len(list) == 0 {
		return t.reply("taskcmds.you_have_no_tasks")
	}
	var b strings.Builder
	admin := t.c.o.Tasks.Policy().IsAdmin(t.m.Principal)
	if admin {
		b.WriteString(t.tr("taskcmds.all_tasks"))
	} else {
		b.WriteString(t.tr("taskcmds.your_tasks"))
	}
	const most = 30
	for i, tk := range list {
		if i == most {
			fmt.Fprintf(&b, t.tr("list.and_more"), len(list)-most)
			break
		}
		next := t.whenOf(tk, tk.NextRun)
		if tk.State != tasks.Active {
			next = "—"
		}
		line := fmt.Sprintf("%s  %s  [%s]  ", tk.ID, name(tk), t.state(tk.State))
		if tk.State == tasks.PendingApproval {
			line += fmt.Sprintf(t.tr("taskcmds.request"), tk.Request.ID)
		} else {
			line += fmt.Sprintf(t.tr("taskcmds.next_last"), next, t.outcome(tk.LastOutcome))
		}
		if admin && tk.Owner != t.m.Principal {
			line += fmt.Sprintf(t.tr("taskcmds.owner"), tk.Owner)
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
	if tk.Source.Route != "" {
		return source.Shown(tk.Source)
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
		return t.reply("taskcmds.only_task_owner_or")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s [%s]\n", tk.ID, name(tk), t.state(tk.State))
	kind := tk.Source.Kind
	if kind == "" {
		kind = t.tr("taskcmds.detected")
	}
	fmt.Fprintf(&b, t.tr("taskcmds.source"), ShowURL(tk.Source.URL), kind)
	courseSites{t}.courseSite(&b, tk)
	fmt.Fprintf(&b, t.tr("taskcmds.schedule"), t.schedule(tk.Schedule))
	if len(tk.RemindBefore) > 0 {
		fmt.Fprintf(&b, t.tr("taskcmds.reminders_before_due"), durations(tk.RemindBefore))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, t.tr("taskcmds.notify"), t.recipients(tk))
	fmt.Fprintf(&b, t.tr("taskcmds.owner_request"), tk.Owner, tk.Request.ID)
	if g := tk.Grant; g != nil {
		fmt.Fprintf(&b, t.tr("taskcmds.approved_scope_on_by"),
			strings.Join(g.Operations, "+"), g.Host, g.PathPrefix, who(g.By, t), g.Basis)
		if g.Dir != "" {
			fmt.Fprintf(&b, t.tr("taskcmds.files_kept_in"), g.Dir)
		}
	} else if d := tk.Decision; d != nil && !d.Approved {
		fmt.Fprintf(&b, t.tr("taskcmds.rejected_by"), who(d.By, t))
		if d.Reason != "" {
			fmt.Fprintf(&b, t.tr("reason.suffix"), d.Reason)
		}
		b.WriteString("\n")
	}
	if n := t.c.o.Tasks.Next(tk); !n.At.IsZero() {
		fmt.Fprintf(&b, t.tr("taskcmds.next_run"), t.whenOf(tk, n.At))
		switch n.Why {
		case tasks.NextByRetryAfter:
			fmt.Fprintf(&b, t.tr("taskcmds.next_held"), n.Host)
		case tasks.NextByBackoff:
			fmt.Fprintf(&b, t.tr("taskcmds.next_backoff"), n.Failures)
		}
	} else if tk.State == tasks.Active {
		fmt.Fprintf(&b, t.tr("taskcmds.next_run"), t.whenOf(tk, tk.NextRun))
	}
	if reason := cmp.Or(tk.LastReason, tk.LastError); reason != "" && tk.Failures > 0 {
		fmt.Fprintf(&b, t.tr("taskcmds.failing_time_in_row"), tk.Failures, t.runError(reason))
	}
	runs, err := t.c.o.Tasks.Runs(t.ctx, tk.ID, 5)
	if err == nil && len(runs) > 0 {
		b.WriteString(t.tr("taskcmds.last_runs"))
		for _, r := range runs {
			fmt.Fprintf(&b, "  %s  %s", t.whenOf(tk, r.Start), t.outcome(r.Outcome))
			if r.Items > 0 || r.New > 0 || r.Changed > 0 {
				b.WriteString(t.trCount("taskcmds.items_new_changed", r.Items, r.Items, r.New, r.Changed))
			}
			if r.Downloads > 0 {
				fmt.Fprintf(&b, t.tr("taskcmds.file_to_download"), r.Downloads)
			}
			if r.Selector != "" {
				fmt.Fprintf(&b, t.tr("taskcmds.entries"), r.Selector)
			}
			if r.Skipped > 0 {
				fmt.Fprintf(&b, t.tr("taskcmds.unreadable_line_skipped"), r.Skipped)
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
		return t.tr("taskcmds.admin")
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
		return t.reply("taskcmds.paused_resume_starts_it", tk.ID, name(tk), tk.ID)
	case "resume":
		return t.reply("taskcmds.resumed_it_checks_again", tk.ID, name(tk))
	}
	return t.reply("taskcmds.deleted_its_history_stays", tk.ID, name(tk), tk.ID)
}

// declaredInConfig answers /delete of a task the config file declares:
// deleting it here would last only until the next reload.
func (t *turn) declaredInConfig(tk *tasks.Task) []Reply {
	if tk.State == tasks.Paused {
		return t.reply("taskcmds.comes_from_service_config", tk.ID, name(tk))
	}
	return t.reply("taskcmds.comes_from_service_config_2", tk.ID, name(tk), tk.ID)
}

func (t *turn) runNow(id string) []Reply {
	rec, err := t.c.o.Tasks.RunNow(t.ctx, t.m.Principal, id)
	if err != nil {
		return t.failed(err)
	}
	s := t.trCount("taskcmds.checked", rec.Items, rec.TaskID, t.outcome(rec.Outcome), rec.Items)
	if rec.New+rec.Changed+rec.Removed > 0 {
		s += t.tr("taskcmds.checked_counts", rec.New, rec.Changed, rec.Removed)
	}
	if rec.Error != "" {
		s += t.tr("reason.suffix", t.runError(rec.Error))
	}
	return []Reply{{Text: s + t.tr("stop")}}
}
