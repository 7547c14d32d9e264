package watch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestI2_BaselineOf40ItemsPushesNothingThenOneNew(t *testing.T) {
	items := feed(40)
	d := compute(t, nil, items, t0, Options{})
	if !d.Baseline || d.Suspect || d.Deferred != 0 {
		t.Fatalf("baseline run: %+v", d)
	}
	assertIdentities(t, d.Events)
	if len(d.Next.Items) != 40 || !d.Next.Baselined {
		t.Fatalf("baseline snapshot holds %d items, baselined=%v", len(d.Next.Items), d.Next.Baselined)
	}

	prev := roundTrip(t, d.Next)
	d = compute(t, prev, feed(41), t0.Add(time.Hour), Options{})
	if d.Baseline || d.Suspect {
		t.Fatalf("second run: %+v", d)
	}
	assertIdentities(t, d.Events, "new|guid-00040|d00040-v1")
	if d.Counts != (Counts{New: 1}) {
		t.Fatalf("counts %+v", d.Counts)
	}
	if _, ok := d.Next.Items["guid-00040"]; !ok {
		t.Fatal("new item not recorded")
	}
}

func TestI2_UnbaselinedSnapshotIsABaseline(t *testing.T) {
	prev := &Snapshot{Version: SnapshotVersion, Validators: Conditional{ETag: `"v1"`}}
	d := compute(t, prev, feed(3), t0, Options{})
	if !d.Baseline || len(d.Events) != 0 || len(d.Next.Items) != 3 {
		t.Fatalf("%+v", d)
	}
	if d.Next.Validators.ETag != `"v1"` {
		t.Fatalf("validators lost: %+v", d.Next.Validators)
	}
}

// TestI2_RepeatedComputeYieldsNoEvents is a property: once a run's events
// are committed, computing again over the same items yields nothing, with
// or without guid churn, filters, event bounds and deadlines.
func TestI2_RepeatedComputeYieldsNoEvents(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		o := Options{
			RemindBefore: []time.Duration{72 * time.Hour, 24 * time.Hour, 2 * time.Hour},
			MaxEvents:    1 + r.IntN(30),
		}
		if r.IntN(3) == 0 {
			o.Exclude = []string{"notice 1"}
		}
		prevItems := randomFeed(r, r.IntN(60))
		prev := compute(t, nil, prevItems, t0, o).Next
		items := mutate(r, prevItems)
		now := t0.Add(time.Duration(r.IntN(96)) * time.Hour)

		// Drain: a run either returns events or, once nothing is
		// deferred, is followed by a run with no events.
		s := prev
		for run := 0; ; run++ {
			if run > 100 {
				t.Fatalf("seed %d: events never drained", seed)
			}
			d := compute(t, s, items, now, o)
			if d.Suspect {
				s = Rebaseline(s, items, now)
				continue
			}
			s = roundTrip(t, d.Next)
			if d.Deferred == 0 {
				break
			}
			if len(d.Events) == 0 {
				t.Fatalf("seed %d: %d deferred but none returned", seed, d.Deferred)
			}
		}
		// Nothing is pending, and the next wake-up (if any) yields an event.
		if w, ok := NextWake(s, now, o); ok {
			if !w.After(now) {
				t.Fatalf("seed %d: reminder pending at %v after draining", seed, w)
			}
			if d := Reminders(s, w, o); len(d.Events) == 0 {
				t.Fatalf("seed %d: wake-up at %v yields no event", seed, w)
			}
		}
		for range 2 {
			d := compute(t, s, items, now, o)
			if len(d.Events) != 0 || d.Deferred != 0 || d.Suspect {
				t.Fatalf("seed %d: repeat run yields %q deferred=%d suspect=%v", seed, identities(d.Events), d.Deferred, d.Suspect)
			}
			s = roundTrip(t, d.Next)
		}
	}
}

func randomFeed(r *rand.Rand, n int) []Item {
	out := make([]Item, 0, n)
	for i := range n {
		it := item(i * 3)
		if r.IntN(4) == 0 {
			it.Due = t0.Add(time.Duration(r.IntN(120)) * time.Hour)
		}
		out = append(out, it)
	}
	return out
}

// mutate changes, removes, adds and re-keys some items.
func mutate(r *rand.Rand, items []Item) []Item {
	var out []Item
	for _, it := range items {
		switch r.IntN(10) {
		case 0: // removed
			continue
		case 1:
			it.Digest += "x"
		case 2:
			it.ID = "churned-" + it.ID
		case 3:
			it.Done = true
		case 4:
			if !it.Due.IsZero() {
				it.Due = it.Due.Add(time.Hour)
			}
		}
		out = append(out, it)
	}
	for i := range r.IntN(40) {
		out = append(out, item(1000+i))
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func TestComputeItemEvents(t *testing.T) {
	// withTombstone returns a snapshot of feed(3) in which guid-00002 was
	// removed (and its removal returned).
	withTombstone := func(t *testing.T) *Snapshot {
		d := compute(t, baselined(t, feed(3)), feed(2), t0, Options{})
		assertIdentities(t, d.Events, "removed|guid-00002|d00002-v1")
		return roundTrip(t, d.Next)
	}
	tests := []struct {
		name   string
		prev   func(t *testing.T) *Snapshot
		items  func() []Item
		want   []string
		counts Counts
		check  func(t *testing.T, next *Snapshot)
	}{
		{
			name:  "unchanged",
			prev:  func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items: func() []Item { return feed(3) },
		},
		{
			name: "changed digest",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items: func() []Item {
				f := feed(3)
				f[1].Digest = "d00001-v2"
				return f
			},
			want:   []string{"changed|guid-00001|d00001-v2"},
			counts: Counts{Changed: 1},
			check: func(t *testing.T, next *Snapshot) {
				if got := next.Items["guid-00001"].Digest; got != "d00001-v2" {
					t.Fatalf("digest %q", got)
				}
			},
		},
		{
			name:   "removed",
			prev:   func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items:  func() []Item { return feed(3)[1:] },
			want:   []string{"removed|guid-00000|d00000-v1"},
			counts: Counts{Removed: 1},
			check: func(t *testing.T, next *Snapshot) {
				if _, ok := next.Items["guid-00000"]; ok {
					t.Fatal("removed item still current")
				}
				if ts, ok := next.Tombstones["guid-00000"]; !ok || !ts.Removed.Equal(t0) {
					t.Fatalf("tombstone %+v %v", ts, ok)
				}
			},
		},
		{
			name: "title and done flag change silently",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items: func() []Item {
				f := feed(3)
				f[0].Title = "Notice zero (updated)"
				f[2].Done = true
				return f
			},
			check: func(t *testing.T, next *Snapshot) {
				if next.Items["guid-00000"].Title != "Notice zero (updated)" || !next.Items["guid-00002"].Done {
					t.Fatalf("silent updates not recorded: %+v", next.Items)
				}
			},
		},
		{
			name: "guid churn is re-keyed silently",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items: func() []Item {
				f := feed(3)
				for i := range f {
					f[i].ID = fmt.Sprintf("tag:news.example.edu,2026:%d", i)
				}
				return f
			},
			check: func(t *testing.T, next *Snapshot) {
				if len(next.Items) != 3 {
					t.Fatalf("items %v", next.Items)
				}
				if _, ok := next.Items["tag:news.example.edu,2026:1"]; !ok {
					t.Fatal("not re-keyed")
				}
			},
		},
		{
			name: "guid churn by normalised title only",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items: func() []Item {
				f := feed(3)
				f[2].ID, f[2].URL, f[2].Alt = "x-2", "https://news.example.edu/new/2", []string{"https://news.example.edu/new/2", "notice 2"}
				return f
			},
			check: func(t *testing.T, next *Snapshot) {
				if _, ok := next.Items["x-2"]; !ok || len(next.Items) != 3 {
					t.Fatalf("items %v", next.Items)
				}
			},
		},
		{
			name: "feed drops guids: link identity matches the old alternate",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items: func() []Item {
				f := feed(3)
				for i := range f {
					f[i].ID, f[i].Alt = f[i].URL, nil
				}
				return f
			},
			check: func(t *testing.T, next *Snapshot) {
				if _, ok := next.Items["https://news.example.edu/n/0"]; !ok || len(next.Items) != 3 {
					t.Fatalf("items %v", next.Items)
				}
			},
		},
		{
			name: "guid churn with a changed digest is changed under the new identity",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(3)) },
			items: func() []Item {
				f := feed(3)
				f[0].ID, f[0].Digest = "x-0", "d00000-v2"
				return f
			},
			want:   []string{"changed|x-0|d00000-v2"},
			counts: Counts{Changed: 1},
		},
		{
			name:  "restored with the same digest is not new",
			prev:  withTombstone,
			items: func() []Item { return feed(3) },
			check: func(t *testing.T, next *Snapshot) {
				if _, ok := next.Items["guid-00002"]; !ok {
					t.Fatal("restored item not current")
				}
				if _, ok := next.Tombstones["guid-00002"]; ok {
					t.Fatal("tombstone kept")
				}
			},
		},
		{
			name: "restored under a churned guid with the same digest is not new",
			prev: withTombstone,
			items: func() []Item {
				f := feed(3)
				f[2].ID = "x-2"
				return f
			},
			check: func(t *testing.T, next *Snapshot) {
				if _, ok := next.Items["x-2"]; !ok || len(next.Tombstones) != 0 {
					t.Fatalf("items %v tombstones %v", next.Items, next.Tombstones)
				}
			},
		},
		{
			name: "restored with another digest is changed",
			prev: withTombstone,
			items: func() []Item {
				f := feed(3)
				f[2].Digest = "d00002-v2"
				return f
			},
			want:   []string{"changed|guid-00002|d00002-v2"},
			counts: Counts{Changed: 1},
			check: func(t *testing.T, next *Snapshot) {
				if next.Items["guid-00002"].Digest != "d00002-v2" || len(next.Tombstones) != 0 {
					t.Fatalf("items %v tombstones %v", next.Items, next.Tombstones)
				}
			},
		},
		{
			name: "duplicate identities in one fetch count once",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(1)) },
			items: func() []Item {
				f := feed(2)
				return append(f, f[1], Item{Title: "no identity"})
			},
			want:   []string{"new|guid-00001|d00001-v1"},
			counts: Counts{New: 1},
		},
		{
			name: "event order: new, changed, removed, then by identity",
			prev: func(t *testing.T) *Snapshot { return baselined(t, feed(4)) },
			items: func() []Item {
				f := feed(6)[1:] // guid-00000 removed; 00004, 00005 new
				f[0].Digest = "v2"
				f[2].Digest = "v2"
				slices.Reverse(f)
				return f
			},
			want: []string{
				"new|guid-00004|d00004-v1",
				"new|guid-00005|d00005-v1",
				"changed|guid-00001|v2",
				"changed|guid-00003|v2",
				"removed|guid-00000|d00000-v1",
			},
			counts: Counts{New: 2, Changed: 2, Removed: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := tc.prev(t)
			d := compute(t, prev, tc.items(), t0, Options{})
			if d.Baseline || d.Suspect || d.Deferred != 0 {
				t.Fatalf("diff %+v", d)
			}
			assertIdentities(t, d.Events, tc.want...)
			if d.Counts != tc.counts {
				t.Fatalf("counts %+v, want %+v", d.Counts, tc.counts)
			}
			if tc.check != nil {
				tc.check(t, d.Next)
			}
			// Committed, the same fetch is quiet.
			again := compute(t, roundTrip(t, d.Next), tc.items(), t0.Add(time.Minute), Options{})
			assertIdentities(t, again.Events)
		})
	}
}

func TestI7_250NewItemsAreActedOnAcrossRunsNoneLost(t *testing.T) {
	s := baselined(t, nil)
	items := feed(250)
	seen := map[string]bool{}
	var per []int
	for run := range 4 {
		d := compute(t, s, items, t0.Add(time.Duration(run)*time.Hour), Options{})
		if d.Suspect {
			t.Fatalf("run %d suspect", run)
		}
		for _, e := range d.Events {
			if e.Kind != EventNew {
				t.Fatalf("run %d: %s", run, e.Identity)
			}
			if seen[e.Identity] {
				t.Fatalf("run %d: %s acted on twice", run, e.Identity)
			}
			seen[e.Identity] = true
		}
		per = append(per, len(d.Events))
		if len(d.Events)+d.Deferred != 250-len(seen)+len(d.Events) {
			t.Fatalf("run %d: %d events + %d deferred, %d seen", run, len(d.Events), d.Deferred, len(seen))
		}
		if len(d.Next.Items) != len(seen) {
			t.Fatalf("run %d: Next records %d items, %d returned so far", run, len(d.Next.Items), len(seen))
		}
		s = roundTrip(t, d.Next)
	}
	if !slices.Equal(per, []int{100, 100, 50, 0}) || len(seen) != 250 {
		t.Fatalf("events per run %v, %d distinct", per, len(seen))
	}
}

func TestI7_DeferredChangesAndRemovalsAreFoundAgain(t *testing.T) {
	prev := baselined(t, feed(10))
	items := feed(12)[2:] // 2 removed, 2 new
	items[0].Digest = "v2"
	items[1].Digest = "v2"
	items[2].Digest = "v2" // 3 changed
	o := Options{MaxEvents: 2}

	var all []string
	s := prev
	for run := 0; run < 5; run++ {
		d := compute(t, s, items, t0, o)
		if len(d.Events) > 2 {
			t.Fatalf("run %d: %d events", run, len(d.Events))
		}
		all = append(all, identities(d.Events)...)
		s = roundTrip(t, d.Next)
		if d.Deferred == 0 {
			break
		}
	}
	want := []string{
		"new|guid-00010|d00010-v1", "new|guid-00011|d00011-v1",
		"changed|guid-00002|v2", "changed|guid-00003|v2",
		"changed|guid-00004|v2", "removed|guid-00000|d00000-v1",
		"removed|guid-00001|d00001-v1",
	}
	if !slices.Equal(all, want) {
		t.Fatalf("events across runs\n got %q\nwant %q", all, want)
	}
	d := compute(t, s, items, t0, o)
	assertIdentities(t, d.Events)
}

func TestI7_DefaultBoundIs100(t *testing.T) {
	d := compute(t, baselined(t, nil), feed(101), t0, Options{MaxEvents: 0})
	if len(d.Events) != DefaultMaxEvents || d.Deferred != 1 || d.Counts.New != 101 {
		t.Fatalf("%d events, %d deferred, counts %+v", len(d.Events), d.Deferred, d.Counts)
	}
}

func TestSuspect(t *testing.T) {
	tests := []struct {
		name    string
		prev    int
		items   func() []Item
		suspect bool
	}{
		{"empty fetch of 40", 40, func() []Item { return nil }, true},
		{"21 of 40 removed", 40, func() []Item { return feed(40)[21:] }, true},
		{"20 of 40 removed", 40, func() []Item { return feed(40)[20:] }, false},
		{"21 of 40 changed", 40, func() []Item {
			f := feed(40)
			for i := range 21 {
				f[i].Digest = "v2"
			}
			return f
		}, true},
		{"11 removed and 10 changed of 40", 40, func() []Item {
			f := feed(40)[11:]
			for i := range 10 {
				f[i].Digest = "v2"
			}
			return f
		}, true},
		{"all guids churned without alternates", 40, func() []Item {
			f := feed(40)
			for i := range f {
				f[i].ID, f[i].Alt = fmt.Sprintf("other-%d", i), nil
			}
			return f
		}, true},
		{"all guids churned with alternates", 40, func() []Item {
			f := feed(40)
			for i := range f {
				f[i].ID = fmt.Sprintf("other-%d", i)
			}
			return f
		}, false},
		{"feed grew by 200", 40, func() []Item { return feed(240) }, false},
		{"below SuspectMin: 18 of 19 removed", 19, func() []Item { return feed(19)[18:] }, false},
		{"below SuspectMin: 19 all removed (empty is suspect at any size)", 19, func() []Item { return nil }, true},
		{"at SuspectMin: 20 all removed", 20, func() []Item { return nil }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := baselined(t, feed(tc.prev))
			d := compute(t, prev, tc.items(), t0, Options{})
			if d.Suspect != tc.suspect {
				t.Fatalf("suspect=%v, want %v (counts %+v)", d.Suspect, tc.suspect, d.Counts)
			}
			if !d.Suspect {
				return
			}
			if len(d.Events) != 0 || d.Deferred != 0 || d.Next != prev {
				t.Fatalf("suspect run: %d events, %d deferred, next==prev %v", len(d.Events), d.Deferred, d.Next == prev)
			}
			if d.Counts.Changed+d.Counts.Removed <= tc.prev/2 {
				t.Fatalf("counts %+v do not explain the verdict", d.Counts)
			}
		})
	}
}

func TestSuspectThenRebaseline(t *testing.T) {
	o := Options{RemindBefore: []time.Duration{24 * time.Hour}}
	old := feed(40)
	old[0].Due = t0.Add(10 * time.Hour)
	prev := compute(t, nil, old, t0, o) // reminds guid-00000 at 24h
	if len(prev.Events) != 1 {
		t.Fatalf("baseline reminders %q", identities(prev.Events))
	}
	items := append(feed(40)[:1:1], feed(100)[60:]...) // 39 removed, 40 new
	items[0].Due = old[0].Due
	d := compute(t, prev.Next, items, t0.Add(time.Hour), o)
	if !d.Suspect {
		t.Fatalf("not suspect: %+v", d.Counts)
	}
	s := Rebaseline(prev.Next, items, t0.Add(2*time.Hour))
	if len(s.Items) != 41 || len(s.Tombstones) != 39 || !s.Baselined {
		t.Fatalf("rebaseline: %d items, %d tombstones", len(s.Items), len(s.Tombstones))
	}
	if !slices.Equal(s.Items["guid-00000"].Reminded, []time.Duration{24 * time.Hour}) {
		t.Fatalf("reminder history lost: %v", s.Items["guid-00000"].Reminded)
	}
	d = compute(t, roundTrip(t, s), items, t0.Add(3*time.Hour), o)
	assertIdentities(t, d.Events)
	// An old item coming back is not new.
	d = compute(t, roundTrip(t, s), append(items, old[5]), t0.Add(3*time.Hour), o)
	assertIdentities(t, d.Events)
}

func TestFilters(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude []string
		want             []string
		filtered         int
	}{
		{"no filters", nil, nil, []string{"new|a|1", "new|b|1", "new|c|1", "changed|k|2", "removed|r|1"}, 0},
		{"include matches title case-insensitively", []string{"EXAM"}, nil, []string{"new|a|1", "changed|k|2"}, 3},
		{"include matches URL", []string{"/cs101/"}, nil, []string{"new|b|1"}, 4},
		{"exclude", nil, []string{"sports"}, []string{"new|a|1", "new|b|1", "changed|k|2", "removed|r|1"}, 1},
		{"exclude wins over include", []string{"exam"}, []string{"make-up"}, []string{"new|a|1"}, 4},
		{"blank keywords are ignored", []string{" "}, []string{""}, []string{"new|a|1", "new|b|1", "new|c|1", "changed|k|2", "removed|r|1"}, 0},
	}
	prevItems := []Item{
		{ID: "k", Title: "Make-up exam room", Digest: "1"},
		{ID: "r", Title: "Library hours", Digest: "1"},
	}
	items := []Item{
		{ID: "k", Title: "Make-up exam room", Digest: "2"},
		{ID: "a", Title: "Final Exam schedule", Digest: "1"},
		{ID: "b", Title: "Office hours", URL: "https://lms.example.edu/cs101/hours", Digest: "1"},
		{ID: "c", Title: "Sports day", Digest: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Include: tc.include, Exclude: tc.exclude}
			d := compute(t, baselined(t, prevItems), items, t0, o)
			want := slices.Clone(tc.want)
			assertIdentities(t, d.Events, want...)
			if d.Counts.Filtered != tc.filtered {
				t.Fatalf("filtered %d, want %d", d.Counts.Filtered, tc.filtered)
			}
			// Filtered changes are recorded: they never fire later, even
			// once the filters are lifted.
			again := compute(t, roundTrip(t, d.Next), items, t0.Add(time.Hour), Options{})
			assertIdentities(t, again.Events)
		})
	}
}

func TestTombstonesKeepTheNewest1000(t *testing.T) {
	s := baselined(t, feed(1200))
	o := Options{MaxEvents: 1000, SuspectMin: 1 << 20}
	// Removed in three runs: 0-499, then 500-899, then 900-1149.
	for run, keep := range []int{500, 900, 1150} {
		d := compute(t, s, feed(1200)[keep:], t0.Add(time.Duration(run+1)*time.Hour), o)
		if d.Deferred != 0 {
			t.Fatalf("run %d deferred %d", run, d.Deferred)
		}
		s = roundTrip(t, d.Next)
	}
	if len(s.Tombstones) != MaxTombstones {
		t.Fatalf("%d tombstones", len(s.Tombstones))
	}
	// Every later removal is kept; 150 of the oldest ones were dropped.
	oldest := 0
	for i := range 1150 {
		_, ok := s.Tombstones[item(i).ID]
		switch {
		case i < 500 && ok:
			oldest++
		case i >= 500 && !ok:
			t.Fatalf("tombstone %s dropped", item(i).ID)
		}
	}
	if oldest != 350 {
		t.Fatalf("%d of the oldest removals kept, want 350", oldest)
	}
}

func BenchmarkDiff10k(b *testing.B) {
	items := feed(10_000)
	prev := Compute(nil, items, t0, Options{}).Next
	next := slices.Clone(items)
	for i := 0; i < 5; i++ {
		next[i*1000].Digest = "v2" // 5 changed
	}
	next = append(next[:9998], item(20_000), item(20_001), item(20_002)) // 2 removed, 3 new
	o := Options{RemindBefore: []time.Duration{72 * time.Hour, 24 * time.Hour, 2 * time.Hour}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d := Compute(prev, next, t0, o)
		if len(d.Events) != 10 {
			b.Fatalf("%d events", len(d.Events))
		}
	}
}

// Items whose due time has passed leave a calendar or course site as a
// matter of course (and an expanded recurring series moves its window on):
// that is not news. They lapse into the tombstones with no removed event,
// and a term's worth of them leaving at once does not make the run
// suspect, while an item still due that disappears is reported removed.
func TestI2_PastDeadlinesLeaveQuietly(t *testing.T) {
	var items []Item
	for i := range 30 {
		items = append(items, Item{ID: fmt.Sprintf("hw-%02d", i), Title: fmt.Sprintf("homework %d", i),
			Digest: fmt.Sprintf("d%02d", i), Due: t0.Add(time.Duration(i-25) * 24 * time.Hour)})
	}
	items = append(items, Item{ID: "notice", Title: "notice", Digest: "dn"})
	prev := roundTrip(t, compute(t, nil, items, t0, Options{}).Next)

	// 25 past deadlines (hw-00..hw-24) and one future one (hw-29) leave.
	d := compute(t, prev, items[25:29], t0, Options{})
	if d.Suspect {
		t.Fatal("past deadlines leaving made the run suspect")
	}
	assertIdentities(t, d.Events, "removed|hw-29|d29", "removed|notice|dn")
	if d.Counts.Lapsed != 25 || d.Counts.Removed != 2 {
		t.Fatalf("counts %+v, want 25 lapsed and 2 removed", d.Counts)
	}
	if _, ok := d.Next.Tombstones["hw-03"]; !ok {
		t.Fatal("a lapsed item is not tombstoned")
	}

	// Listed again later with the same content, it is not new.
	next := roundTrip(t, d.Next)
	d = compute(t, next, append(items[25:29:29], items[3]), t0.Add(time.Hour), Options{})
	assertIdentities(t, d.Events)
}

// A recurring series is news once: of a series seen for the first time
// only its earliest new occurrence is reported; occurrences of a known
// series coming into view are recorded quietly and still get reminders.
func TestI2_RecurringSeriesIsNewsOnce(t *testing.T) {
	occ := func(series string, week int) Item {
		due := t0.Add(time.Duration(week)*7*24*time.Hour + 2*time.Hour)
		return Item{ID: fmt.Sprintf("%s#%d", series, week), Title: series, Digest: fmt.Sprintf("%s-%d", series, week),
			Due: due, Series: series}
	}
	o := Options{RemindBefore: []time.Duration{24 * time.Hour}}
	prev := roundTrip(t, compute(t, nil, []Item{occ("lab", 0), occ("lab", 1)}, t0.Add(-48*time.Hour), o).Next)

	// lab continues (week 2), a new series "quiz" appears with three
	// occurrences listed out of order, and one plain item is new.
	items := []Item{occ("lab", 0), occ("lab", 1), occ("lab", 2), occ("quiz", 3), occ("quiz", 1), occ("quiz", 2),
		{ID: "note", Title: "note", Digest: "n"}}
	d := compute(t, prev, items, t0, o)
	var got []string
	for _, ev := range d.Events {
		got = append(got, string(ev.Kind)+" "+ev.Item.ID)
	}
	slices.Sort(got)
	want := []string{"deadline lab#0", "new note", "new quiz#1"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if d.Counts.Continued != 3 {
		t.Fatalf("counts %+v, want 3 continued (lab#2, quiz#2, quiz#3)", d.Counts)
	}
	for _, id := range []string{"lab#2", "quiz#2", "quiz#3"} {
		if _, ok := d.Next.Items[id]; !ok {
			t.Errorf("%s not recorded", id)
		}
	}
	// A week on, a quietly recorded occurrence still gets its reminder.
	d = compute(t, roundTrip(t, d.Next), items, t0.Add(7*24*time.Hour), o)
	var reminded bool
	for _, ev := range d.Events {
		reminded = reminded || ev.Kind == EventDeadline && ev.Item.ID == "quiz#1"
	}
	if !reminded {
		t.Fatalf("no reminder for quiz#1: %v", d.Events)
	}
}

// A changed event says what the item was before, from the entry or
// tombstone it replaces, and only what differs; the was fields never
// touch identities or counts.
func TestChangedEventsSayWhatTheItemWas(t *testing.T) {
	due := t0.Add(72 * time.Hour)
	moved := t0.Add(120 * time.Hour)
	withDue := func() []Item {
		f := feed(3)
		f[1].Due = due
		return f
	}
	tests := []struct {
		name     string
		prev     []Item
		tombs    bool // remove guid-00001 in a run between, so it returns from its tombstone
		items    func() []Item
		identity string
		wasTitle string
		wasDue   time.Time
	}{
		{
			name: "retitled",
			prev: feed(3),
			items: func() []Item {
				f := feed(3)
				f[1].Title, f[1].Digest = "Notice 1 — Room 204", "d00001-v2"
				return f
			},
			identity: "changed|guid-00001|d00001-v2",
			wasTitle: "Notice 1",
		},
		{
			name: "due moved",
			prev: withDue(),
			items: func() []Item {
				f := withDue()
				f[1].Due, f[1].Digest = moved, "d00001-v2"
				return f
			},
			identity: "changed|guid-00001|d00001-v2",
			wasDue:   due,
		},
		{
			name: "due dropped",
			prev: withDue(),
			items: func() []Item {
				f := feed(3)
				f[1].Digest = "d00001-v2"
				return f
			},
			identity: "changed|guid-00001|d00001-v2",
			wasDue:   due,
		},
		{
			name: "due added: nothing was",
			prev: feed(3),
			items: func() []Item {
				f := withDue()
				f[1].Digest = "d00001-v2"
				return f
			},
			identity: "changed|guid-00001|d00001-v2",
		},
		{
			name: "digest only: nothing was",
			prev: withDue(),
			items: func() []Item {
				f := withDue()
				f[1].Digest = "d00001-v2"
				return f
			},
			identity: "changed|guid-00001|d00001-v2",
		},
		{
			name: "re-keyed and retitled",
			prev: feed(3),
			items: func() []Item {
				f := feed(3)
				f[1].ID, f[1].Title, f[1].Digest = "x-1", "Notice one", "d00001-v2"
				return f
			},
			identity: "changed|x-1|d00001-v2",
			wasTitle: "Notice 1",
		},
		{
			name:  "restored from its tombstone with new content",
			prev:  withDue(),
			tombs: true,
			items: func() []Item {
				f := feed(3)
				f[1].Title, f[1].Due, f[1].Digest = "Notice 1 (moved)", moved, "d00001-v2"
				return f
			},
			identity: "changed|guid-00001|d00001-v2",
			wasTitle: "Notice 1",
			wasDue:   due,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := baselined(t, tc.prev)
			if tc.tombs {
				gone := slices.Delete(slices.Clone(tc.prev), 1, 2)
				d := compute(t, prev, gone, t0, Options{})
				assertIdentities(t, d.Events, "removed|guid-00001|d00001-v1")
				prev = roundTrip(t, d.Next)
			}
			d := compute(t, prev, tc.items(), t0.Add(time.Minute), Options{})
			assertIdentities(t, d.Events, tc.identity)
			if d.Counts != (Counts{Changed: 1}) {
				t.Fatalf("counts %+v, want one changed", d.Counts)
			}
			ev := d.Events[0]
			if ev.WasTitle != tc.wasTitle {
				t.Errorf("WasTitle %q, want %q", ev.WasTitle, tc.wasTitle)
			}
			if !ev.WasDue.Equal(tc.wasDue) {
				t.Errorf("WasDue %v, want %v", ev.WasDue, tc.wasDue)
			}
			if got := d.Next.Items[ev.Item.ID]; got.Title != ev.Item.Title || !got.Due.Equal(ev.Item.Due) {
				t.Errorf("next records %q due %v, want the new item", got.Title, got.Due)
			}
		})
	}
}

// TestI2_DropToZeroIsSuspectAtAnySize: a source that listed N items and
// now lists none pushes no removals, whatever N; items that merely lapsed
// (their due time passed) may still leave an empty list quietly.
func TestI2_DropToZeroIsSuspectAtAnySize(t *testing.T) {
	for _, n := range []int{1, 3, 19, 20, 40} {
		prev := compute(t, nil, feed(n), t0, Options{}).Next
		d := compute(t, prev, nil, t0.Add(time.Hour), Options{})
		if !d.Suspect || len(d.Events) != 0 || d.Next != prev {
			t.Fatalf("%d → 0: suspect=%v events %v", n, d.Suspect, identities(d.Events))
		}
		if d.Counts.Removed != n {
			t.Fatalf("%d → 0: counts %+v", n, d.Counts)
		}
	}
	// Deadlines that all passed: an empty list is the calendar moving on.
	due := []Item{{ID: "a", Title: "A", Digest: "d", Due: t0.Add(time.Hour)}}
	prev := compute(t, nil, due, t0, Options{}).Next
	d := compute(t, prev, nil, t0.Add(48*time.Hour), Options{})
	if d.Suspect {
		t.Fatalf("lapsed deadline made the run suspect: %+v", d.Counts)
	}
}
