package runner

import (
	"slices"
	"strings"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// MaxSourceTitle bounds, in characters, the source title a task keeps.
const MaxSourceTitle = 120

// noticeContent applies what a read of the source means for the run's
// notices (SPEC §20): the source's own title names a task without a
// name from this run on, and removals from a feed are dropped from the
// pushes unless the task asks for them (they stay counted, and the
// snapshot has forgotten them either way).
func (j *job) noticeContent(t *tasks.Task, res watch.Result, diff *watch.Diff) {
	if title := sourceTitle(res.Title); title != "" {
		t.SourceTitle, j.sourceTitle = title, title
	}
	if !t.RemovalsNotified(res.Kind) {
		diff.Events = slices.DeleteFunc(diff.Events, func(ev watch.Event) bool { return ev.Kind == watch.EventRemoved })
	}
}

// sourceTitle is a source's own title, one line of at most
// MaxSourceTitle characters.
func sourceTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > MaxSourceTitle {
		s = string(r[:MaxSourceTitle-1]) + "…"
	}
	return s
}

// withContent gives the push of event ev what a person reads to decide
// whether to click (SPEC §20): the item's summary, its changed lines,
// and the task's own template.
func withContent(msg *delivery.Message, t *tasks.Task, ev watch.Event) {
	it := &msg.Items[0]
	it.Summary = ev.Item.Summary
	if len(ev.Added)+len(ev.Removed) > 0 {
		it.Diff = &delivery.ItemDiff{Added: ev.Added, Removed: ev.Removed}
	}
	msg.Template = t.Template
}
