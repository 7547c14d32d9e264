package conversation

import (
	"context"
	"strings"
	"testing"
)

// A one-off time that has already passed could never notify: it is
// refused in plain words, in both languages, and no request is made.
func TestWatch_AtAPastTimeIsRefused(t *testing.T) {
	r := newRig(t, defaultPolicy())
	for _, say := range []func(string, string) string{r.say, r.sayZh} {
		got := say(alice, "/watch https://dept.example.edu/notices.xml at 2026-10-01 09:00")
		if !strings.Contains(got, "already passed") && !strings.Contains(got, "已经过去") {
			t.Fatalf("reply %q", got)
		}
	}
	if list, _ := r.m.List(context.Background(), alice); len(list) != 0 {
		t.Fatalf("%d tasks made", len(list))
	}
	// The future is fine (t0 is 2 November 2026).
	if got := r.say(alice, "/watch https://dept.example.edu/notices.xml at 2026-12-01 09:00"); !strings.Contains(got, "Request") {
		t.Fatalf("future at: %q", got)
	}
}

// /watch … selector <css> carries the selector to the task and the
// summary names it; without one, the summary says a selector will be
// picked from the page. A bad selector is refused at once.
func TestWatch_SelectorClause(t *testing.T) {
	r := newRig(t, defaultPolicy())
	got := r.say(alice, "/watch https://dept.example.edu/notices selector ul.notices > li every 2h")
	if !strings.Contains(got, "ul.notices > li") {
		t.Fatalf("summary %q", got)
	}
	list, _ := r.m.List(context.Background(), alice)
	if len(list) != 1 || list[0].Source.Selector != "ul.notices > li" || list[0].Source.Kind != "html" {
		t.Fatalf("tasks %+v", list)
	}
	got = r.say(alice, "/watch https://dept.example.edu/news as html every 2h")
	if !strings.Contains(got, "picked at the first check") {
		t.Fatalf("summary without selector %q", got)
	}
	got = r.say(alice, "/watch https://dept.example.edu/x selector ul[[ every 2h")
	if !strings.Contains(got, "not valid CSS") {
		t.Fatalf("bad selector reply %q", got)
	}
}
