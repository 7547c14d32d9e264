package conversation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// TestCommandReplies drives every command through the real manager on a
// real bbolt store and checks the reply, in English and in Chinese.
func TestCommandReplies(t *testing.T) {
	type setup func(r *rig) (id, rid string)
	pending := func(r *rig) (string, string) {
		tk := r.submit(alice, "https://example.org/feed.xml")
		return tk.ID, tk.Request.ID
	}
	active := func(r *rig) (string, string) {
		tk := r.submit(bob, "https://news.example.edu/feed.xml")
		return tk.ID, tk.Request.ID
	}
	paused := func(r *rig) (string, string) {
		id, rid := active(r)
		if _, err := r.m.Pause(context.Background(), bob, id); err != nil {
			r.t.Fatal(err)
		}
		return id, rid
	}
	// failing: the task failed 3 checks in a row, and its next check is
	// pushed back, as the runner records it (SPEC §18).
	failing := func(why string) setup {
		return func(r *rig) (string, string) {
			id, rid := active(r)
			at := time.Date(2026, 11, 2, 13, 0, 0, 0, time.UTC)
			if _, err := r.m.Update(context.Background(), id, func(t *tasks.Task) error {
				t.Failures, t.LastError, t.LastReason = 3, "transient", "transient: GET https://news.example.edu: HTTP 503"
				t.NextRun, t.Postponed, t.PostponedTo = at, why, at
				if why == tasks.NextByRetryAfter {
					t.HeldBy = "news.example.edu"
				}
				return nil
			}); err != nil {
				r.t.Fatal(err)
			}
			return id, rid
		}
	}
	tests := []struct {
		name   string
		setup  setup
		who    string
		text   string // {id} and {rid} are replaced
		zh     bool
		want   []string
		reject []string
	}{
		{name: "help", who: alice, text: "/help", want: []string{"/watch <url>", "/remind", "/approve", "/quiet", "/cancel"}},
		{name: "help zh", who: alice, text: "/help", zh: true, want: []string{"全部用法及示例", "/watch <网址>", "免打扰"}},
		{name: "watch host not allowed", who: alice, text: "/watch https://example.org/feed.xml every 2h",
			want: []string{"Request r-", "https://example.org/feed.xml", "host example.org", "every 2h", "Who will be told: this chat",
				"awaits an admin's approval", "That URL's host example.org is not in the allowed list; an admin can approve it with /approve r-"}},
		{name: "watch host not allowed zh", who: alice, text: "/watch https://example.org/feed.xml every 2h", zh: true,
			want: []string{"申请 r-", "主机 example.org", "每 2 小时", "本聊天", "等待管理员批准", "不在允许列表中", "/approve r-"}},
		{name: "watch allowed host awaits", who: alice, text: "/watch https://lms.example.edu/feed.xml every 1h as rss",
			want: []string{"Request r-", "Kind: rss"}, reject: []string{"not in the allowed list"}},
		{name: "watch auto-approved", who: bob, text: `/watch https://news.example.edu/feed.xml every 30m name "Campus news"`,
			want: []string{"(Campus news)", "every 30m", "Approved — task t-", "baseline"}, reject: []string{"awaits"}},
		{name: "watch auto-approved zh", who: bob, text: "/监控 https://news.example.edu/feed.xml 每 30 分钟",
			want: []string{"已批准——任务 t-", "每 30 分钟", "基线"}},
		{name: "watch query hidden", who: bob, text: "/watch https://news.example.edu/feed.xml?key=s3cret every 1h",
			want: []string{"https://news.example.edu/feed.xml?…"}, reject: []string{"s3cret"}},
		{name: "remind", who: alice, text: "/remind https://lms.example.edu/cal.ics",
			want: []string{"deadline reminders from https://lms.example.edu/cal.ics", "72h, 24h, 2h", "every 1h"}},
		{name: "remind before zh", who: alice, text: "/提醒 https://lms.example.edu/cal.ics before 24h,2h", zh: true,
			want: []string{"截止提醒", "24h, 2h"}},
		{name: "tasks none", who: alice, text: "/tasks", want: []string{"You have no tasks"}},
		{name: "tasks none zh", who: alice, text: "/tasks", zh: true, want: []string{"你还没有任务"}},
		{name: "tasks mine", setup: pending, who: alice, text: "/tasks", want: []string{"Your tasks:", "{id}", "[pending approval]", "request {rid}"}},
		{name: "tasks mine zh", setup: pending, who: alice, text: "/任务", want: []string{"你的任务", "{id}", "待批准", "申请 {rid}"}},
		{name: "tasks admin sees all", setup: pending, who: admin, text: "/tasks", want: []string{"All tasks:", "{id}", "(owner telegram:21)"}},
		{name: "tasks others hidden", setup: pending, who: bob, text: "/tasks", want: []string{"You have no tasks"}},
		{name: "tasks active", setup: active, who: bob, text: "/tasks", want: []string{"{id}", "[active]", "next 2026-11-02 09:00", "last none yet"}},
		{name: "task detail", setup: active, who: bob, text: "/task {id}",
			want: []string{"{id} — news.example.edu/feed.xml [active]", "Source: https://news.example.edu/feed.xml (detected)",
				"Schedule: every 1h", "Notify: this chat", "Owner: telegram:22; request {rid}", "Approved scope: watch on news.example.edu/, by telegram:22 (auto_approve)"}},
		{name: "task detail backing off", setup: failing(tasks.NextByBackoff), who: bob, text: "/task {id}",
			want: []string{"Next run: 2026-11-02 13:00", "(checked less often after 3 failures in a row)", "Failing 3 time(s) in a row: transient: GET https://news.example.edu: HTTP 503"}},
		{name: "task detail held zh", setup: failing(tasks.NextByRetryAfter), who: bob, text: "/task {id}", zh: true,
			want: []string{"news.example.edu 要求在此之前不要访问", "连续失败 3 次：transient: GET https://news.example.edu: HTTP 503"}},
		{name: "task detail zh", setup: active, who: bob, text: "/task {id}", zh: true, want: []string{"来源：https://news.example.edu/feed.xml", "批准范围"}},
		{name: "task by request id", setup: pending, who: alice, text: "/task {rid}", want: []string{"{id}", "[pending approval]"}},
		{name: "task not found", who: alice, text: "/task t-000000", want: []string{"There is no task or request t-000000."}},
		{name: "task not found zh", who: alice, text: "/task t-000000", zh: true, want: []string{"没有编号为 t-000000 的任务或申请"}},
		{name: "pause", setup: active, who: bob, text: "/pause {id}", want: []string{"Paused {id}", "/resume {id}"}},
		{name: "pause zh", setup: active, who: bob, text: "/暂停 {id}", want: []string{"已暂停 {id}"}},
		{name: "pause twice", setup: paused, who: bob, text: "/pause {id}", want: []string{"Task {id} is paused, not active."}},
		{name: "pause twice zh", setup: paused, who: bob, text: "/pause {id}", zh: true, want: []string{"任务 {id} 当前为“已暂停”"}},
		{name: "resume", setup: paused, who: bob, text: "/resume {id}", want: []string{"Resumed {id}"}},
		{name: "resume zh", setup: paused, who: bob, text: "/resume {id}", zh: true, want: []string{"已恢复 {id}"}},
		{name: "resume out of scope", setup: func(r *rig) (string, string) {
			id, rid := paused(r)
			p := defaultPolicy()
			p.AutoApprove, p.AllowedHosts = nil, nil
			r.m.SetPolicy(p)
			return id, rid
		}, who: bob, text: "/resume {id}", want: []string{"The host news.example.edu is no longer auto-approved for telegram:22; an admin can approve it with /approve {rid}."}},
		{name: "resume out of scope zh", setup: func(r *rig) (string, string) {
			id, rid := paused(r)
			p := defaultPolicy()
			p.AutoApprove, p.AllowedHosts = nil, nil
			r.m.SetPolicy(p)
			return id, rid
		}, who: bob, text: "/resume {id}", zh: true, want: []string{"主机 news.example.edu 已不再为 telegram:22 自动批准；管理员可以用 /approve {rid} 批准。"}},
		{name: "resume pending", setup: pending, who: alice, text: "/resume {id}", want: []string{"is pending approval, not paused"}},
		{name: "delete", setup: active, who: bob, text: "/delete {id}", want: []string{"Deleted {id}"}},
		{name: "delete zh", setup: active, who: bob, text: "/delete {id}", zh: true, want: []string{"已删除 {id}"}},
		{name: "run not owner", setup: active, who: bob, text: "/run {id}", want: []string{"does not own scheduling right now; try again shortly"}},
		{name: "run not owner zh", setup: active, who: bob, text: "/run {id}", zh: true, want: []string{"现在无法运行"}},
		{name: "mute", setup: active, who: bob, text: "/mute {id} 2h", want: []string{"Muted {id} here until 2026-11-02 11:00", "once"}},
		{name: "mute zh", setup: active, who: bob, text: "/静音 {id} 2h", want: []string{"已在此静音 {id} 至 2026-11-02 11:00"}},
		{name: "mute off", setup: active, who: bob, text: "/mute {id} off", want: []string{"{id} is no longer muted"}},
		{name: "mute unknown task", who: bob, text: "/mute t-000000 2h", want: []string{"There is no task or request t-000000."}},
		{name: "quiet", who: alice, text: "/quiet 22:00-07:00", want: []string{"Quiet hours 22:00-07:00 (UTC)", "once"}},
		{name: "quiet zh", who: alice, text: "/免打扰 22:00-07:00", want: []string{"免打扰 22:00-07:00"}},
		{name: "quiet off", who: alice, text: "/quiet off", want: []string{"Quiet hours are off"}},
		{name: "digest", who: alice, text: "/digest daily 20:00", want: []string{"Digest daily 20:00", "one message"}},
		{name: "digest zh", who: alice, text: "/汇总 每天 20:00", want: []string{"已为本聊天设置汇总推送 每天 20:00 UTC："}},
		{name: "digest in its own zone", who: alice, text: "/digest daily 20:00 Asia/Shanghai", want: []string{"Digest daily 20:00 Asia/Shanghai set for this chat"}},
		{name: "digest off", who: alice, text: "/digest off", want: []string{"The digest is off"}},
		{name: "digest bad", who: alice, text: "/digest daily 25:00", want: []string{"Usage: /digest"}},
		{name: "inbox empty", who: alice, text: "/inbox", want: []string{"nothing unread"}},
		{name: "inbox empty zh", who: alice, text: "/收件箱", want: []string{"没有未读"}},
		{name: "read all empty", who: alice, text: "/read all", want: []string{"Nothing was unread."}},
		{name: "read missing", who: alice, text: "/read 42", want: []string{"no item 42 in your inbox"}},
		{name: "read missing zh", who: alice, text: "/read 42", zh: true, want: []string{"收件箱里没有 42"}},
		{name: "cancel nothing", who: alice, text: "/cancel", want: []string{"Nothing to cancel."}},
		{name: "cancel nothing zh", who: alice, text: "/取消", want: []string{"没有进行中的对话"}},
		{name: "unknown command", who: alice, text: "/wach https://x.example.edu", want: []string{"Did you mean /watch?"}},
		{name: "unknown command zh", who: alice, text: "/wach", zh: true, want: []string{"你是想用 /watch 吗"}},
		{name: "usage", who: alice, text: "/pause", want: []string{"Which one?", "Usage: /pause <id>"}},
		{name: "plain text", who: alice, text: "hello there", want: []string{"I understand commands", "/help"}},
		{name: "plain text zh", who: alice, text: "你好", want: []string{"我能理解命令"}},
		{name: "not a requester", who: "feishu:ou_x", text: "/watch https://news.example.edu/feed.xml every 1h",
			want: []string{"You are not allowed to request watches; ask an admin."}},
		{name: "not a requester zh", who: "feishu:ou_x", text: "/watch https://news.example.edu/feed.xml every 1h", zh: true,
			want: []string{"你没有申请关注的权限"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, defaultPolicy())
			var id, rid string
			if tc.setup != nil {
				id, rid = tc.setup(r)
			}
			fill := func(s string) string { return strings.NewReplacer("{id}", id, "{rid}", rid).Replace(s) }
			var got string
			if tc.zh {
				got = r.sayZh(tc.who, fill(tc.text))
			} else {
				got = r.sayRaw(tc.who, fill(tc.text))
			}
			for _, w := range tc.want {
				contains(t, got, fill(w))
			}
			for _, b := range tc.reject {
				excludes(t, got, fill(b))
			}
		})
	}
}

func TestMuteAndQuietStoredForThisChat(t *testing.T) {
	r := newRig(t, defaultPolicy())
	tk := r.submit(bob, "https://news.example.edu/feed.xml")
	r.say(bob, "/mute "+tk.ID+" 1d")
	r.say(bob, "/quiet 23:00-06:30")
	p, err := r.core.o.Prefs.Get(context.Background(), ChatOf(bob))
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(24 * time.Hour); !p.Mutes[tk.ID].Equal(want) || p.Quiet != "23:00-06:30" || p.Zone != "UTC" {
		t.Fatalf("prefs = %+v", p)
	}
	if other, _ := r.core.o.Prefs.Get(context.Background(), ChatOf(alice)); other.Quiet != "" || len(other.Mutes) != 0 {
		t.Fatalf("another chat's prefs changed: %+v", other)
	}
	r.say(bob, "/mute "+tk.ID+" off")
	r.say(bob, "/quiet off")
	p, _ = r.core.o.Prefs.Get(context.Background(), ChatOf(bob))
	if len(p.Mutes) != 0 || p.Quiet != "" {
		t.Fatalf("prefs after off = %+v", p)
	}
}

// TestDigestStoredForThisChat: /digest keeps the chat's digest schedule
// (and zone) where delivery reads it; /digest off lifts it.
func TestDigestStoredForThisChat(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.say(bob, "/digest daily 20:00 Asia/Shanghai")
	p, err := r.core.o.Prefs.Get(context.Background(), ChatOf(bob))
	if err != nil || p.Digest != "daily 20:00 Asia/Shanghai" || p.Zone != "UTC" {
		t.Fatalf("prefs = %+v (%v)", p, err)
	}
	r.say(bob, "/digest off")
	if p, _ = r.core.o.Prefs.Get(context.Background(), ChatOf(bob)); p.Digest != "" {
		t.Fatalf("prefs after off = %+v", p)
	}
}

func TestPermissions(t *testing.T) {
	r := newRig(t, defaultPolicy())
	own := r.submit(alice, "https://example.org/a.xml") // pending
	act := r.submit(bob, "https://news.example.edu/b.xml")

	// Someone else's task: refused, unchanged.
	contains(t, r.say(alice, "/pause "+act.ID), "Only the task's owner or an admin can do that.")
	contains(t, r.say(alice, "/delete "+act.ID), "Only the task's owner or an admin can do that.")
	contains(t, r.say(alice, "/task "+act.ID), "Only the task's owner or an admin can see it.")
	contains(t, r.sayZh(alice, "/pause "+act.ID), "只有任务的创建者或管理员可以这样做")
	if st := r.task(act.ID).State; st != tasks.Active {
		t.Fatalf("state %s after a refused pause", st)
	}
	// The owner and an admin may.
	contains(t, r.say(bob, "/pause "+act.ID), "Paused "+act.ID)
	contains(t, r.say(admin, "/resume "+act.ID), "Resumed "+act.ID)
	contains(t, r.say(admin, "/task "+own.ID), own.ID)

	// Requesters cannot decide requests, typed or pressed.
	contains(t, r.say(alice, "/approve "+own.Request.ID), "Only an admin can approve requests.")
	contains(t, r.say(bob, "/reject "+own.Request.ID+" no"), "Only an admin can reject requests.")
	contains(t, r.sayZh(bob, "/approve "+own.Request.ID), "只有管理员可以批准申请")
	press := r.msg(bob, "")
	press.Button = &Press{Action: "approve", Arg: own.Request.ID, Ref: "42"}
	got := r.core.Handle(context.Background(), press)
	if len(got) != 1 || got[0].Toast != "Only an admin can approve requests." || got[0].Text != "" || got[0].Edit {
		t.Fatalf("non-admin press answered %+v, want a toast only", got)
	}
	if st := r.task(own.ID).State; st != tasks.PendingApproval {
		t.Fatalf("state %s after a non-admin press", st)
	}

	// An admin's press edits the prompt with the decision.
	press = r.msg(admin, "")
	press.Button = &Press{Action: "approve", Arg: own.Request.ID, Ref: "42"}
	got = r.core.Handle(context.Background(), press)
	if len(got) != 1 || !got[0].Edit || got[0].Toast != "Approved" {
		t.Fatalf("admin press answered %+v", got)
	}
	contains(t, got[0].Text, "Approved "+own.Request.ID+" by telegram:1", own.ID)
	if tk := r.task(own.ID); tk.State != tasks.Active || tk.Decision.By != admin {
		t.Fatalf("task after approval: %s by %+v", tk.State, tk.Decision)
	}
	// Pressed again (a second admin, a stale card): said plainly, nothing changes.
	press = r.msg("console:admin", "")
	press.Button = &Press{Action: "reject", Arg: own.Request.ID}
	got = r.core.Handle(context.Background(), press)
	if len(got) != 1 || !got[0].Edit {
		t.Fatalf("late press answered %+v", got)
	}
	contains(t, got[0].Text, "is already active")
	if st := r.task(own.ID).State; st != tasks.Active {
		t.Fatalf("late reject changed the state to %s", st)
	}
	// A button with a forged argument is refused without a manager call.
	press = r.msg(admin, "")
	press.Button = &Press{Action: "approve", Arg: "r-1 ; drop"}
	if got := r.core.Handle(context.Background(), press); len(got) != 1 || got[0].Toast == "" || got[0].Edit {
		t.Fatalf("forged press answered %+v", got)
	}
}

// TestApprovalFlow: a request waits, every admin gets one prompt with
// buttons in their own chat, a press decides it, and the requester's
// chat hears who decided — once.
func TestApprovalFlow(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.startCore()
	m := r.msg(alice, "/watch https://example.org/feed.xml every 1h")
	m.Name = "Alice  Liddell"
	reply := joinText(r.core.Handle(context.Background(), m))
	rid := requestID(t, reply)
	contains(t, reply, "awaits an admin's approval")

	for _, chat := range []string{"telegram:chat:1", "console:admin"} {
		waitFor(t, func() bool { return len(r.out.to(chat)) == 1 })
		p := r.out.to(chat)[0]
		contains(t, p.Text, "Request "+rid+" from Alice Liddell (telegram:21)", "https://example.org/feed.xml", "not in the allowed list", "/approve "+rid)
		if len(p.Buttons) != 2 || p.Buttons[0] != (Button{Label: "Approve", Action: "approve", Arg: rid}) ||
			p.Buttons[1] != (Button{Label: "Reject", Action: "reject", Arg: rid}) {
			t.Fatalf("prompt buttons = %+v", p.Buttons)
		}
		if len(p.Buttons[0].Data()) > 64 {
			t.Fatalf("callback data %q longer than 64 bytes", p.Buttons[0].Data())
		}
	}
	excludes(t, joinText(r.out.to(ChatOf(alice))), "Request") // the requester gets no prompt

	press := r.msg(admin, "")
	press.Button = &Press{Action: "approve", Arg: rid}
	if got := r.core.Handle(context.Background(), press); len(got) != 1 || !got[0].Edit {
		t.Fatalf("press answered %+v", got)
	}
	waitFor(t, func() bool { return len(r.out.to(ChatOf(alice))) == 1 })
	contains(t, r.out.to(ChatOf(alice))[0].Text, "Your request "+rid+" was approved by telegram:1", "is active")

	// Replayed signals change nothing: prompts and decisions go out once.
	tk := r.task(rid)
	for _, what := range []string{"requested", "approved", "approved"} {
		r.core.follow(context.Background(), tasks.Change{TaskID: tk.ID, What: what})
	}
	if n := len(r.out.to(ChatOf(alice))); n != 1 {
		t.Fatalf("requester told %d times", n)
	}
	if n := len(r.out.to("telegram:chat:1")); n != 1 {
		t.Fatalf("admin prompted %d times", n)
	}

	// A rejection, typed, with a reason, in Chinese for a Chinese requester.
	reply = r.sayZh(alice, "/watch https://example.org/other.xml every 1h")
	rid2 := requestID(t, reply)
	waitFor(t, func() bool { return len(r.out.to("telegram:chat:1")) == 2 })
	contains(t, r.say(admin, "/reject "+rid2+" too noisy"), "Rejected "+rid2+" by telegram:1")
	waitFor(t, func() bool { return len(r.out.to(ChatOf(alice))) == 2 })
	contains(t, r.out.to(ChatOf(alice))[1].Text, "你的申请 "+rid2, "已被 telegram:1 拒绝：too noisy")
}

func TestApprovalPromptForRequestsPendingBeforeRun(t *testing.T) {
	r := newRig(t, defaultPolicy())
	tk := r.submit(alice, "https://example.org/feed.xml")
	r.startCore()
	waitFor(t, func() bool { return len(r.out.to("telegram:chat:1")) == 1 })
	contains(t, r.out.to("telegram:chat:1")[0].Text, tk.Request.ID)
}

func TestAutoApprovedRequestNeedsNoPromptOrNotice(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.startCore()
	contains(t, r.say(bob, "/watch https://news.example.edu/feed.xml every 1h"), "Approved")
	contains(t, r.say(admin, "/watch https://example.org/own.xml every 1h"), "Approved")
	// A later request still prompts: the core saw the earlier signals.
	rid := requestID(t, r.say(alice, "/watch https://example.org/feed.xml every 1h"))
	waitFor(t, func() bool { return len(r.out.to("telegram:chat:1")) == 1 })
	contains(t, r.out.to("telegram:chat:1")[0].Text, rid)
	// Bob heard nothing more; the admin only got alice's prompt.
	if b, a := r.out.to(ChatOf(bob)), r.out.to(ChatOf(admin)); len(b) != 0 || len(a) != 1 {
		t.Fatalf("extra notices: bob %v admin %v", b, a)
	}
}

func TestFollowUpDialog(t *testing.T) {
	tests := []struct {
		answer string
		zh     bool
		want   string
	}{
		{answer: "ok", want: "every 1h"},
		{answer: "", want: "every 1h"},
		{answer: "Yes", want: "every 1h"},
		{answer: "好", zh: true, want: "每 1 小时"},
		{answer: "every 2h", want: "every 2h"},
		{answer: "30m", want: "every 30m"},
		{answer: "daily 08:00", want: "daily 08:00"},
	}
	for _, tc := range tests {
		t.Run(tc.answer, func(t *testing.T) {
			r := newRig(t, defaultPolicy())
			ask := r.say
			if tc.zh {
				ask = r.sayZh
			}
			q := ask(alice, "/watch https://example.org/feed.xml name Feed")
			if tc.zh {
				contains(t, q, "多久检查一次")
			} else {
				contains(t, q, "How often should I check? e.g. every 1h (default), daily 08:00")
			}
			if list, _ := r.m.List(context.Background(), alice); len(list) != 0 {
				t.Fatal("a request was made before the question was answered")
			}
			got := ask(alice, tc.answer)
			contains(t, got, tc.want, "(Feed)")
			requestID(t, got)
			// The dialog is over: the same answer again is plain text.
			contains(t, r.say(alice, "ok"), "I understand commands")
		})
	}
}

func TestFollowUpDialogBadAnswerAsksAgain(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.say(alice, "/watch https://example.org/feed.xml")
	contains(t, r.say(alice, "every 5s"), "That schedule doesn't work", "/cancel")
	contains(t, r.say(alice, "every 3h"), "every 3h", "Request r-")
}

func TestFollowUpDialogExpires(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.say(alice, "/watch https://example.org/feed.xml")
	r.clock.Advance(DialogTTL + time.Minute)
	contains(t, r.say(alice, "ok"), "I understand commands")
	if list, _ := r.m.List(context.Background(), alice); len(list) != 0 {
		t.Fatal("an expired question still made a request")
	}
}

func TestFollowUpDialogIsPerPerson(t *testing.T) {
	r := newRig(t, defaultPolicy())
	group := func(who, text string) string {
		m := r.msg(who, text)
		m.Chat, m.Group, m.Addressed = "telegram:chat:-100", true, true
		return joinText(r.core.Handle(context.Background(), m))
	}
	contains(t, group(alice, "/watch https://example.org/feed.xml"), "How often")
	contains(t, group(bob, "ok"), "I understand commands") // not bob's question
	contains(t, group(alice, "ok"), "Request r-", "this chat")
}

func TestCancel(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.say(alice, "/watch https://example.org/feed.xml")
	contains(t, r.say(alice, "/cancel"), "Cancelled.")
	contains(t, r.say(alice, "ok"), "I understand commands")
	contains(t, r.say(alice, "/cancel"), "Nothing to cancel.")

	r.sayZh(alice, "/watch https://example.org/feed.xml")
	contains(t, r.sayZh(alice, "/取消"), "已取消")
	// A new command also ends the question.
	r.say(alice, "/watch https://example.org/feed.xml")
	r.say(alice, "/tasks")
	contains(t, r.say(alice, "ok"), "I understand commands")
}

func TestRepeatedMessageIDAnsweredOnce(t *testing.T) {
	r := newRig(t, defaultPolicy())
	m := r.msg(bob, "/watch https://news.example.edu/feed.xml every 1h")
	if got := r.core.Handle(context.Background(), m); len(got) != 1 {
		t.Fatalf("first delivery answered %+v", got)
	}
	if got := r.core.Handle(context.Background(), m); got != nil {
		t.Fatalf("redelivery answered %+v", got)
	}
	if list, _ := r.m.List(context.Background(), bob); len(list) != 1 {
		t.Fatalf("%d tasks after a redelivered message, want 1", len(list))
	}
	// The same id on another channel is another message.
	m.Channel = "feishu"
	if got := r.core.Handle(context.Background(), m); len(got) != 1 {
		t.Fatalf("another channel's message answered %+v", got)
	}
}

func TestGroupMessages(t *testing.T) {
	r := newRig(t, defaultPolicy())
	m := r.msg(alice, "/tasks")
	m.Chat, m.Group = "telegram:chat:-100", true
	if got := r.core.Handle(context.Background(), m); got != nil {
		t.Fatalf("unaddressed group message answered %+v", got)
	}
	m = r.msg(alice, "/tasks@other_bot")
	m.Chat, m.Group, m.Addressed = "telegram:chat:-100", true, true
	if got := r.core.Handle(context.Background(), m); got != nil {
		t.Fatalf("command for another bot answered %+v", got)
	}
	tk := r.submit(alice, "https://example.org/feed.xml")
	m = r.msg(admin, "")
	m.Chat, m.Group, m.Button = "telegram:chat:-100", true, &Press{Action: "approve", Arg: tk.Request.ID}
	if got := r.core.Handle(context.Background(), m); len(got) != 1 || !got[0].Edit {
		t.Fatalf("a press in a group answered %+v", got)
	}
	m = r.msg(alice, "/tasks@herald_bot")
	m.Chat, m.Group, m.Addressed = "telegram:chat:-100", true, true
	contains(t, joinText(r.core.Handle(context.Background(), m)), "Your tasks:")
}

// TestLanguageFollowsEachMessageElseTheLastUsed: a message with words is
// answered in their language; a bare command follows the language last
// used in the chat, and the default only when nothing was used yet.
func TestLanguageFollowsEachMessageElseTheLastUsed(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.sayZh(alice, "/help")
	contains(t, r.sayRaw(alice, "/tasks"), "你还没有任务") // the last-used language
	contains(t, r.sayRaw(bob, "/tasks"), "You have no tasks")
	contains(t, r.sayRaw(bob, "/任务"), "你还没有任务") // typing Chinese answers in Chinese
	contains(t, r.sayRaw(bob, "/tasks"), "你还没有任务")
	contains(t, r.sayRaw(bob, "/watch https://example.org/feed.xml 每天 08:00"), "申请")
	contains(t, r.sayRaw(bob, "/read all"), "Nothing was unread") // English words answer in English
	contains(t, r.sayRaw(bob, "/tasks"), "Your tasks")
	r.core.o.Lang = "zh"
	contains(t, r.sayRaw(carol, "/tasks"), "你还没有任务")              // nothing used yet: the default
	contains(t, r.sayRaw(carol, "/tasks please"), "I don't know") // English words beat the zh default
	contains(t, r.sayRaw(carol, "/tasks"), "You have no tasks")
}

func TestDefaultLanguageFromOptions(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.core.o.Lang = "zh"
	contains(t, r.sayRaw(alice, "/tasks"), "你还没有任务")
}

// A config reload changes the default language for chats that have not
// said which they prefer.
func TestReloadChangesTheDefaultLanguage(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.core.SetDefaults("zh", nil)
	contains(t, r.sayRaw(alice, "/tasks"), "你还没有任务")
	r.core.SetDefaults("en", nil)
	contains(t, r.sayRaw(bob, "/tasks"), "no tasks")
}

func TestInbox(t *testing.T) {
	r := newRig(t, defaultPolicy())
	ctx := context.Background()
	for i, title := range []string{"Old notice", "New notice"} {
		_, err := r.store.Inbox().Append(ctx, store.InboxItem{Principal: carol, EffectKey: "k" + title, Title: title, Body: []byte(`{}`), CreatedAt: t0.Add(time.Duration(i) * time.Minute)}, 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	got := r.say(carol, "/inbox")
	contains(t, got, "Unread (2), newest first:", "Old notice", "New notice", "/read")
	if strings.Index(got, "New notice") > strings.Index(got, "Old notice") {
		t.Fatalf("inbox not newest first:\n%s", got)
	}
	contains(t, r.sayZh(carol, "/inbox"), "未读（2 条）")
	items, _ := r.store.Inbox().List(ctx, carol, store.InboxQuery{})
	contains(t, r.say(carol, "/read "+items[0].ID), shortID(items[0].ID)+"  ", "New notice") // the full id is taken too
	contains(t, r.say(carol, "/read all"), "Marked 1 read.")
	contains(t, r.say(carol, "/inbox"), "nothing unread")
	contains(t, r.say(alice, "/inbox"), "nothing unread") // someone else's inbox is not theirs
}

func TestConsoleRequestsNotifyTheInbox(t *testing.T) {
	r := newRig(t, defaultPolicy())
	got := r.say(carol, "/watch https://example.org/feed.xml every 1h")
	contains(t, got, "Who will be told: your inbox (/inbox)")
	tk := r.task(requestID(t, got))
	if len(tk.Notify) != 1 || tk.Notify[0] != "inbox:console:carol" || tk.ReplyTo != "" {
		t.Fatalf("notify %v reply-to %s", tk.Notify, tk.ReplyTo)
	}
	// The decision still reaches the console chat.
	r.startCore()
	contains(t, r.say("console:admin", "/approve "+tk.Request.ID), "Approved")
	waitFor(t, func() bool { return len(r.out.to(carol)) == 1 })
	contains(t, r.out.to(carol)[0].Text, "Your request "+tk.Request.ID+" was approved by console:admin")
}

func TestInboxTokenIsPrivate(t *testing.T) {
	r := newRig(t, defaultPolicy())
	got := r.say(alice, "/inbox token")
	contains(t, got, "hin_", "Authorization: Bearer")
	// In a group the token goes to the private chat, never the group.
	m := r.msg(alice, "/inbox token")
	m.Chat, m.Group, m.Addressed = "telegram:chat:-100", true, true
	group := joinText(r.core.Handle(context.Background(), m))
	contains(t, group, "I sent you an inbox token in a private chat.")
	excludes(t, group, "hin_")
	private := r.out.to(ChatOf(alice))
	if len(private) != 1 || !strings.Contains(private[0].Text, "hin_") {
		t.Fatalf("private chat got %+v", private)
	}
	tok := private[0].Text[strings.Index(private[0].Text, "hin_"):]
	tok = tok[:strings.IndexByte(tok, '\n')]
	if p, err := (r.core.o.Tokens).(interface {
		Lookup(context.Context, string) (string, error)
	}).Lookup(context.Background(), tok); err != nil || p != alice {
		t.Fatalf("token belongs to %q (%v)", p, err)
	}
}

// TestI10_NoSecretInErrorReplies: replies never carry a URL's query,
// credentials or a token, whatever the error.
func TestI10_NoSecretInErrorReplies(t *testing.T) {
	r := newRig(t, defaultPolicy())
	for _, text := range []string{
		"/watch https://user:s3cr3t-pw@example.org/feed.xml every 1h",
		"/watch ftp://example.org/feed.xml?token=s3cr3t-q",
		"/watch https://example.org/feed.xml?token=s3cr3t-q every 5s",
		"/watch https://example.org/feed.xml?token=s3cr3t-q as pdf",
	} {
		for _, zh := range []bool{false, true} {
			var got string
			if zh {
				got = r.sayZh(alice, text)
			} else {
				got = r.say(alice, text)
			}
			if got == "" {
				t.Fatalf("%s: no reply", text)
			}
			excludes(t, got, "s3cr3t")
		}
	}

	// A failing run's error (which names the URL with its token) is shown redacted.
	r.src.fail(errFeedAuth)
	r.startManager()
	tk := r.submit(bob, "https://news.example.edu/feed.xml?token=s3cr3t-feed-token")
	for _, zh := range []bool{false, true} {
		var got string
		if zh {
			got = r.sayZh(bob, "/run "+tk.ID)
		} else {
			got = r.say(bob, "/run "+tk.ID)
		}
		contains(t, got, tk.ID)
		excludes(t, got, "s3cr3t")
		got = r.say(bob, "/task "+tk.ID)
		contains(t, got, "https://news.example.edu/feed.xml?…")
		excludes(t, got, "s3cr3t")
	}
}

func TestRunNow(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.startManager()
	// The source lists its items before the task exists: the running
	// manager's own first check may be the one /run waits for.
	r.src.mu.Lock()
	r.src.items = items(3)
	r.src.mu.Unlock()
	tk := r.submit(bob, "https://news.example.edu/feed.xml")
	contains(t, r.say(bob, "/run "+tk.ID), "Checked "+tk.ID, "3 items")
	contains(t, r.sayZh(bob, "/run "+tk.ID), "已检查 "+tk.ID, "共 3 条")
	contains(t, r.say(alice, "/run "+tk.ID), "Only the task's owner or an admin can run it.")
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"GET https://a.example/x?token=abc: 401", "GET https://a.example/x?…: 401"},
		{"see https://u:p@a.example/x.", "see https://a.example/x."},
		{"bearer abcdef", "[redacted]"},
		{"token hin_0123456789abcdef leaked", "token [redacted] leaked"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw key", "[redacted] key"},
		{"plain text", "plain text"},
	}
	for _, tc := range tests {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestI9_CancelledTurnDoesNothing(t *testing.T) {
	r := newRig(t, defaultPolicy())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := r.core.Handle(ctx, r.msg(bob, "/watch https://news.example.edu/feed.xml every 1h")); got != nil {
		t.Fatalf("cancelled turn answered %+v", got)
	}
	if list, _ := r.m.List(context.Background(), bob); len(list) != 0 {
		t.Fatal("a cancelled turn made a request")
	}
}

func TestChatOf(t *testing.T) {
	for in, want := range map[string]string{
		"telegram:10001": "telegram:chat:10001", "feishu:ou_abc": "feishu:user:ou_abc",
		"console:admin": "console:admin", "bogus": "", "slack:x": "",
	} {
		if got := ChatOf(in); got != want {
			t.Errorf("ChatOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRedact: whatever the text, a URL query and token shapes never survive.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"GET https://a.example/x?token=abc: 401", "https://u:p@h/x", "hin_0123456789abcdef", "Bearer x", "",
		"https://a.example/x?token=abc\uFF08\u622A\u6B62\uFF09"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(s)
		for _, u := range reURL.FindAllString(out, -1) {
			if i := strings.IndexAny(u, "?#"); i >= 0 && !strings.HasPrefix(u[i:], "?…") {
				t.Fatalf("URL part kept: %q → %q", s, out)
			}
		}
		if Redact(out) != out {
			t.Fatalf("not stable: %q → %q → %q", s, out, Redact(out))
		}
	})
}

// A flood from one person is answered up to the burst, then once with
// a polite word, then not at all until the limit lifts; another person
// is answered throughout.
func TestChatRateLimitPerPrincipal(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.core.SetChatRate(30, 10) // the defaults
	answered, refusals, silent := 0, 0, 0
	for range 1000 {
		switch got := r.say(bob, "/tasks"); {
		case got == "":
			silent++
		case strings.Contains(got, "faster than I answer"):
			refusals++
			contains(t, got, "2 s")
		default:
			answered++
		}
	}
	if answered != 10 || refusals != 1 || silent != 1000-11 {
		t.Fatalf("answered %d, refused %d, silent %d; want 10, 1 and the rest", answered, refusals, silent)
	}
	if got := r.say(alice, "/tasks"); got == "" || strings.Contains(got, "faster") {
		t.Fatalf("another person: %q, want an ordinary answer", got)
	}
	if got := r.sayZh(bob, "/tasks"); got != "" {
		t.Fatalf("still over the limit, answered %q", got)
	}
	r.clock.Advance(2 * time.Second)
	if got := r.say(bob, "/tasks"); got == "" || strings.Contains(got, "faster") {
		t.Fatalf("after the limit lifted: %q, want an ordinary answer", got)
	}
	if got := r.sayZh(bob, "/tasks"); !strings.Contains(got, "消息发得太快") {
		t.Fatalf("over again, in Chinese: %q, want the one polite answer", got)
	}
}
