package conversation

import (
	"context"
	"strings"
	"testing"
)

// A manager error reads in the chat's language, as the manager wrote it:
// a Chinese chat gets the Chinese text (ids, hosts and /approve hints
// kept), an English chat the English one, and neither sees the other's.
func TestErrorRepliesInTheChatsLanguage(t *testing.T) {
	type setup func(r *rig) (id, rid string)
	allowedThenNarrowed := func(r *rig) (string, string) {
		tk := r.submit(alice, "https://lms.example.edu/feed.xml") // approved: allowed host
		if _, err := r.m.Pause(context.Background(), alice, tk.ID); err != nil {
			r.t.Fatal(err)
		}
		p := defaultPolicy()
		p.AllowedHosts = nil
		r.m.SetPolicy(p)
		return tk.ID, tk.Request.ID
	}
	atLimit := func(r *rig) (string, string) {
		p := defaultPolicy()
		p.Limits.MaxTasks = 1
		r.m.SetPolicy(p)
		tk := r.submit(bob, "https://news.example.edu/feed.xml")
		return tk.ID, tk.Request.ID
	}
	active := func(r *rig) (string, string) {
		tk := r.submit(bob, "https://news.example.edu/feed.xml")
		return tk.ID, tk.Request.ID
	}
	tests := []struct {
		name   string
		setup  setup
		who    string
		text   string // {id} and {rid} are replaced
		en, zh string
	}{
		{name: "scope with approve hint", setup: allowedThenNarrowed, who: alice, text: "/resume {id}",
			en: "The host lms.example.edu is no longer in the allowed list; an admin can approve it again with /approve {rid}.",
			zh: "主机 lms.example.edu 已不在允许列表中；管理员可以用 /approve {rid} 重新批准。"},
		{name: "limit", setup: atLimit, who: alice, text: "/watch https://news.example.edu/other.xml every 1h",
			en: "Herald's tasks are at their limit in all: 1 of 1; ask an admin to delete some first.",
			zh: "任务总数已达上限：1 / 1 个；请联系管理员先删除一些。"},
		{name: "request state", setup: active, who: admin, text: "/approve {rid}",
			en: "Request {rid} is already active.",
			zh: "申请 {rid} 已经是“运行中”状态。"},
		{name: "task state", setup: active, who: bob, text: "/resume {id}",
			en: "Task {id} is active, not paused.",
			zh: "任务 {id} 当前为“运行中”，没有暂停。"},
		{name: "not found", who: alice, text: "/pause t-000000",
			en: "There is no task or request t-000000.",
			zh: "没有编号为 t-000000 的任务或申请；发送 /tasks 查看。"},
		{name: "forbidden", setup: active, who: alice, text: "/delete {id}",
			en: "Only the task's owner or an admin can do that.",
			zh: "只有任务的创建者或管理员可以这样做。"},
	}
	for _, tc := range tests {
		for _, zh := range []bool{false, true} {
			name := tc.name + " en"
			if zh {
				name = tc.name + " zh"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t, defaultPolicy())
				var id, rid string
				if tc.setup != nil {
					id, rid = tc.setup(r)
				}
				fill := strings.NewReplacer("{id}", id, "{rid}", rid).Replace
				want, other := tc.en, tc.zh
				say := r.say
				if zh {
					want, other, say = tc.zh, tc.en, r.sayZh
				}
				got := say(tc.who, fill(tc.text))
				if got != fill(want) {
					t.Fatalf("reply %q\nwant  %q", got, fill(want))
				}
				excludes(t, got, fill(other))
			})
		}
	}
}
