package runner_test

import (
	"context"
	"testing"

	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/runner"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Task notices (watching, failing, recovered, unreachable) follow the
// language the owner pinned or last used in the chat they go to, not the
// language the task was requested in; with nothing remembered there, the
// request's language.
func TestTaskNoticesFollowTheOwnersPinnedOrLastUsedLanguage(t *testing.T) {
	for _, tc := range []struct {
		name, created, chatLang, want string
	}{
		{"requested in Chinese, pinned English", "zh", "en", "en"},
		{"requested in English, last used Chinese", "en", "zh", "zh"},
		{"nothing remembered: the request's language", "zh", "", "zh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.own()
			ctx := context.Background()
			chat := "telegram:chat:42"
			tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", ReplyTo: chat, Lang: tc.created,
				URL: "https://news.example.edu/feed.xml", Schedule: "every 1h", Notify: []string{"inbox:console:alice"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.chatLang != "" {
				prefs := chatprefs.Store{KV: r.store.Channels()}
				if err := prefs.Update(ctx, chat, func(p *chatprefs.Prefs) { p.Lang = tc.chatLang }); err != nil {
					t.Fatal(err)
				}
			}
			r.src.Push(items("a", 1), nil)
			r.run(tk.ID) // baseline: "watching"
			for range runner.FailingAfter {
				r.src.Push(nil, watch.Errorf(watch.NotFound, "HTTP 404"))
				r.run(tk.ID)
			}
			r.src.Push(items("a", 1), nil)
			r.run(tk.ID) // recovered
			if err := r.m.MarkUnreachable(ctx, tk.ID, "inbox:console:alice", "blocked"); err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, n := range []tasks.Notice{tasks.NoticeBaseline, tasks.NoticeFailing, tasks.NoticeRecovered, tasks.NoticeUnreachable} {
				title, _ := tasks.NoticeText(n, tc.want)
				want[title] = true
			}
			got := noticeTitles(t, r, tk.ID)
			for title := range want {
				if got[title] != 1 {
					t.Errorf("notice %q sent %d times; all notices: %v", title, got[title], got)
				}
			}
			if len(got) != len(want) {
				t.Errorf("notices %v, want exactly %v", got, want)
			}
		})
	}
}
