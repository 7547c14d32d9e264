package conversation

import (
	"context"
	"testing"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// /delete of a task the config file declares deletes nothing: the next
// reload would bring it back. It says where the task comes from and what
// to do instead, in the person's language; a chat task is deleted as ever.
func TestDeleteOfAConfigTaskSaysItComesFromTheFile(t *testing.T) {
	r := newRig(t, defaultPolicy())
	ctx := context.Background()
	decl := tasks.Declared{ID: "campus-news", Name: "Campus news", Source: watch.Spec{Kind: "rss", URL: "https://news.example.edu/feed.xml"},
		Schedule: "every 30m", Notify: []string{"inbox:console:admin"}, Owner: admin}
	if err := r.m.SetDeclared(ctx, []tasks.Declared{decl}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		say  func(string, string) string
		want []string
	}{
		{r.say, []string{"campus-news (Campus news) comes from the service's config file", "remove it from the config file and reload", "/pause campus-news"}},
		{r.sayZh, []string{"campus-news（Campus news）来自服务的配置文件", "请从配置文件中移除并重新加载", "/pause campus-news"}},
	} {
		got := tc.say(admin, "/delete campus-news")
		contains(t, got, tc.want...)
		excludes(t, got, "Deleted", "已删除")
		if tk := r.task("campus-news"); tk.State != tasks.Active {
			t.Fatalf("a config task was %s by /delete", tk.State)
		}
	}
	contains(t, r.say(admin, "/pause campus-news"), "Paused campus-news")
	contains(t, r.say(admin, "/delete campus-news"), "from the config file and reload; it stays paused meanwhile")
	contains(t, r.say(alice, "/delete campus-news"), "Only the task's owner or an admin") // not theirs: nothing told

	tk := r.submit(bob, "https://news.example.edu/feed.xml")
	contains(t, r.say(bob, "/delete "+tk.ID), "Deleted "+tk.ID)
}
