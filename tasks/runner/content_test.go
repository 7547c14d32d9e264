package runner_test

import (
	"context"
	"slices"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// changes runs the task over first (the baseline) then second and
// returns the change items the second run claimed.
func changes(t *testing.T, r *rig, id string, first, second []watch.Item) []delivery.Item {
	t.Helper()
	r.src.Push(first, nil)
	if rec := r.run(id); rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("first run %s, want baseline", rec.Outcome)
	}
	if fxs, _ := r.effects(id); len(fxs) != 0 {
		t.Fatalf("I2: the baseline claimed %d change pushes", len(fxs))
	}
	r.src.Push(second, nil)
	r.run(id)
	fxs, _ := r.effects(id)
	var out []delivery.Item
	for _, fx := range fxs {
		out = append(out, decodeMsg(t, fx).Items...)
	}
	return out
}

// A feed's old post scrolling off the end is not news: the run still
// counts it and the snapshot forgets it, but nothing is pushed, unless
// the task opts in with notify_removed. A page's withdrawn entry stays
// news as before.
func TestRemovals_QuietForFeedsUnlessOptedIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    string
		optIn   bool
		removed bool // whether the removal is pushed
	}{
		{"rss, default", "rss", false, false},
		{"rsshub, default", "rsshub", false, false},
		{"rss, notify_removed", "rss", true, true},
		{"html, default", "html", false, true},
		{"ical, default", "ical", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.own()
			r.src.Kind = tc.kind
			tk := r.activeTask()
			if tc.optIn {
				if _, err := r.m.Update(context.Background(), tk.ID, func(t *tasks.Task) error { t.NotifyRemoved = true; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			all := items("a", 3)
			got := changes(t, r, tk.ID, all[:2], all[1:])
			var kinds []string
			for _, it := range got {
				kinds = append(kinds, it.Change)
			}
			slices.Sort(kinds)
			want := []string{"new"}
			if tc.removed {
				want = []string{"new", "removed"}
			}
			if !slices.Equal(kinds, want) {
				t.Fatalf("pushed %v, want %v", kinds, want)
			}
			runs, err := r.m.Runs(context.Background(), tk.ID, 1)
			if err != nil || len(runs) == 0 || runs[0].Removed != 1 {
				t.Fatalf("the run records %+v (%v), want 1 removed", runs, err)
			}
		})
	}
}

// A change push carries the item's summary and, for a page, the lines
// it gained and lost; the task is named by the feed's own title when it
// has no name, never by its id.
func TestChangePush_CarriesSummaryDiffAndTheSourcesTitle(t *testing.T) {
	r := newRig(t)
	r.own()
	r.src.Kind, r.src.Title = "html", "Department notices"
	tk := r.activeTask()
	page := func(digest string, lines ...string) watch.Item {
		return watch.Item{ID: "https://dept.example.edu/n/1", Title: "Exam", URL: "https://dept.example.edu/n/1",
			Digest: digest, Summary: "Room and time of the exam", Lines: lines}
	}
	got := changes(t, r, tk.ID, []watch.Item{page("v1", "Room 101", "Monday")}, []watch.Item{page("v2", "Room 204", "Monday")})
	if len(got) != 1 {
		t.Fatalf("items %+v", got)
	}
	it := got[0]
	if it.Summary != "Room and time of the exam" || it.Diff == nil ||
		!slices.Equal(it.Diff.Added, []string{"Room 204"}) || !slices.Equal(it.Diff.Removed, []string{"Room 101"}) {
		t.Fatalf("item %+v diff %+v", it, it.Diff)
	}
	fxs, _ := r.effects(tk.ID)
	if name := decodeMsg(t, fxs[0]).TaskName; name != "Department notices" {
		t.Fatalf("task named %q, want the source's title", name)
	}
	stored, err := r.m.Get(context.Background(), tk.ID)
	if err != nil || stored.SourceTitle != "Department notices" {
		t.Fatalf("task keeps source title %q (%v)", stored.SourceTitle, err)
	}
}
