package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestOneItemNoticesAreSingular: the owner of a source with one item
// hears "Now watching …: 1 item" and, after one failed check, "failed 1
// check", not "1 items" or "1 checks".
func TestOneItemNoticesAreSingular(t *testing.T) {
	r := newRig(t)
	r.own()
	tk, err := r.m.Submit(context.Background(), tasks.Submission{Principal: "console:admin", Lang: "en",
		URL: "https://news.example.edu/feed.xml", Schedule: "every 1h", Notify: []string{"inbox:console:alice"}})
	if err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("a", 1), nil)
	r.run(tk.ID)
	_, notices := r.effects(tk.ID)
	var texts []string
	for _, n := range notices {
		texts = append(texts, decodeMsg(t, n).Text)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, ": 1 item. ") || strings.Contains(all, "1 items") {
		t.Errorf("baseline notice: %q", all)
	}
	if _, text := tasks.NoticeIn(tasks.NoticeFailing, "en", "Feed", 1, watch.NotFound); !strings.Contains(text, "failed 1 check (") {
		t.Errorf("failing after one check: %q", text)
	}
	if _, text := tasks.NoticeIn(tasks.NoticeFailing, "en", "Feed", 3, watch.NotFound); !strings.Contains(text, "failed 3 checks in a row") {
		t.Errorf("failing after three checks: %q", text)
	}
	if _, text := tasks.NoticeIn(tasks.NoticeBaseline, "zh", "Feed", 1); !strings.Contains(text, "1 项") {
		t.Errorf("Chinese baseline: %q", text)
	}
	if _, text := tasks.NoticeIn(tasks.NoticeWatchingMany, "en", "2", "1"); !strings.Contains(text, "(1 item in all)") {
		t.Errorf("watching many: %q", text)
	}
}
