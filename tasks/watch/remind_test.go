package watch

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

var offsets = Options{RemindBefore: []time.Duration{72 * time.Hour, 24 * time.Hour, 2 * time.Hour}}

func dueItem(id string, due time.Time) Item {
	return Item{ID: id, Title: "Essay " + id, Digest: id + "-v1", Due: due}
}

func deadlineID(id string, due time.Time, off time.Duration) string {
	return "deadline|" + id + "|" + strconv.FormatInt(due.Unix(), 10) + "|" + off.String()
}

func TestI2_BaselineRemindsOnlyTheNearestPassedOffset(t *testing.T) {
	in20h, in1h := t0.Add(20*time.Hour), t0.Add(time.Hour)
	done := dueItem("e", in20h)
	done.Done = true
	items := []Item{
		dueItem("a", in20h),
		dueItem("b", in1h),
		dueItem("c", t0.Add(100*time.Hour)), // outside every window
		dueItem("d", t0.Add(-time.Hour)),    // past
		done,
		{ID: "f", Title: "no due", Digest: "f"},
	}
	d := compute(t, nil, items, t0, offsets)
	if !d.Baseline {
		t.Fatal("not a baseline")
	}
	assertIdentities(t, d.Events, deadlineID("a", in20h, 24*time.Hour), deadlineID("b", in1h, 2*time.Hour))
	if e := d.Events[0]; e.Kind != EventDeadline || e.Offset != 24*time.Hour || e.Item.ID != "a" || !e.Item.Due.Equal(in20h) {
		t.Fatalf("event %+v", e)
	}
	if d.Counts != (Counts{Deadline: 2}) {
		t.Fatalf("counts %+v", d.Counts)
	}
	// The farther passed offsets are marked, so none fires late.
	if got := d.Next.Items["b"].Reminded; !slices.Equal(got, []time.Duration{2 * time.Hour, 24 * time.Hour, 72 * time.Hour}) {
		t.Fatalf("b reminded %v", got)
	}
	again := Reminders(roundTrip(t, d.Next), t0.Add(time.Minute), offsets)
	assertIdentities(t, again.Events)
}

func TestReminders_EachOffsetOnceAsItsInstantPasses(t *testing.T) {
	due := t0.Add(100 * time.Hour)
	s := baselined(t, []Item{dueItem("a", due)})
	steps := []struct {
		before time.Duration // now = due - before
		want   []string
		wake   time.Duration // NextWake = due - wake; 0: none
	}{
		{80 * time.Hour, nil, 72 * time.Hour},
		{72 * time.Hour, []string{deadlineID("a", due, 72*time.Hour)}, 24 * time.Hour},
		{30 * time.Hour, nil, 24 * time.Hour},
		{24 * time.Hour, []string{deadlineID("a", due, 24*time.Hour)}, 2 * time.Hour},
		{24*time.Hour - time.Second, nil, 2 * time.Hour},
		{2 * time.Hour, []string{deadlineID("a", due, 2*time.Hour)}, 0},
		{time.Hour, nil, 0},
	}
	for _, st := range steps {
		now := due.Add(-st.before)
		d := Reminders(s, now, offsets)
		assertIdentities(t, d.Events, st.want...)
		s = roundTrip(t, d.Next)
		wake, ok := NextWake(s, now, offsets)
		if st.wake == 0 {
			if ok {
				t.Fatalf("at due-%v: wake %v, want none", st.before, wake)
			}
			continue
		}
		if !ok || !wake.Equal(due.Add(-st.wake)) {
			t.Fatalf("at due-%v: wake %v %v, want due-%v", st.before, wake, ok, st.wake)
		}
	}
}

func TestReminders_SeveralPassedOffsetsEmitOnlyTheNearest(t *testing.T) {
	due := t0.Add(100 * time.Hour)
	s := baselined(t, []Item{dueItem("a", due)}) // at due-100h: nothing yet
	d := Reminders(s, due.Add(-90*time.Minute), offsets)
	assertIdentities(t, d.Events, deadlineID("a", due, 2*time.Hour))
	if d.Events[0].Offset != 2*time.Hour {
		t.Fatalf("offset %v", d.Events[0].Offset)
	}
	if _, ok := NextWake(d.Next, due.Add(-90*time.Minute), offsets); ok {
		t.Fatal("a wake-up remains")
	}
	assertIdentities(t, Reminders(d.Next, due.Add(-time.Minute), offsets).Events)
}

func TestReminders_NothingAtOrAfterDue(t *testing.T) {
	due := t0.Add(100 * time.Hour)
	s := baselined(t, []Item{dueItem("a", due)}) // never reminded
	for _, now := range []time.Time{due, due.Add(time.Nanosecond), due.Add(48 * time.Hour)} {
		d := Reminders(s, now, offsets)
		assertIdentities(t, d.Events)
		if _, ok := NextWake(s, now, offsets); ok {
			t.Fatalf("wake after due at %v", now)
		}
	}
	d := compute(t, s, []Item{dueItem("a", due)}, due, offsets)
	assertIdentities(t, d.Events)
}

func TestReminders_ChangedDueIsANewEvent(t *testing.T) {
	due := t0.Add(20 * time.Hour)
	d := compute(t, nil, []Item{dueItem("a", due)}, t0, offsets)
	assertIdentities(t, d.Events, deadlineID("a", due, 24*time.Hour))

	// Extended by 10 hours, same content digest: the reminder history
	// resets and the moved deadline is reminded again.
	moved := due.Add(10 * time.Hour)
	d = compute(t, roundTrip(t, d.Next), []Item{dueItem("a", moved)}, t0.Add(time.Hour), offsets)
	assertIdentities(t, d.Events, deadlineID("a", moved, 72*time.Hour)) // 29h left
	if got := d.Next.Items["a"].Reminded; !slices.Equal(got, []time.Duration{72 * time.Hour}) {
		t.Fatalf("reminded %v", got)
	}

	// Moved again and its digest changed: a changed event and a reminder.
	again := moved.Add(-9 * time.Hour) // 19h left
	it := dueItem("a", again)
	it.Digest = "a-v2"
	d = compute(t, roundTrip(t, d.Next), []Item{it}, t0.Add(2*time.Hour), offsets)
	assertIdentities(t, d.Events, "changed|a|a-v2", deadlineID("a", again, 24*time.Hour))
}

func TestReminders_CompletedItemGetsNoMore(t *testing.T) {
	due := t0.Add(100 * time.Hour)
	s := baselined(t, []Item{dueItem("a", due)})
	it := dueItem("a", due)
	it.Done = true
	d := compute(t, s, []Item{it}, due.Add(-25*time.Hour), offsets)
	assertIdentities(t, d.Events) // done is a silent update
	d = compute(t, roundTrip(t, d.Next), []Item{it}, due.Add(-23*time.Hour), offsets)
	assertIdentities(t, d.Events)
	assertIdentities(t, Reminders(d.Next, due.Add(-time.Hour), offsets).Events)
	if _, ok := NextWake(d.Next, due.Add(-23*time.Hour), offsets); ok {
		t.Fatal("wake for a completed item")
	}
}

func TestReminders_RemovedItemGetsNoMore(t *testing.T) {
	due := t0.Add(100 * time.Hour)
	s := baselined(t, []Item{dueItem("a", due), dueItem("b", due)})
	now := due.Add(-23 * time.Hour)
	d := compute(t, s, []Item{dueItem("b", due)}, now, offsets)
	assertIdentities(t, d.Events, "removed|a|a-v1", deadlineID("b", due, 24*time.Hour))
	assertIdentities(t, Reminders(d.Next, due.Add(-time.Hour), offsets).Events, deadlineID("b", due, 2*time.Hour))

	// A removal deferred by the bound still silences the item's reminders.
	d = compute(t, s, []Item{dueItem("b", due)}, now, Options{RemindBefore: offsets.RemindBefore, MaxEvents: 1})
	assertIdentities(t, d.Events, "removed|a|a-v1")
	if d.Deferred != 1 {
		t.Fatalf("deferred %d", d.Deferred)
	}
	d = compute(t, s, append(feedOf(3), dueItem("b", due)), now, Options{RemindBefore: offsets.RemindBefore, MaxEvents: 3})
	assertIdentities(t, d.Events, "new|n0|n0", "new|n1|n1", "new|n2|n2")
	if d.Deferred != 2 || d.Counts.Deadline != 1 {
		t.Fatalf("deferred %d counts %+v", d.Deferred, d.Counts)
	}
}

func feedOf(n int) []Item {
	out := make([]Item, n)
	for i := range out {
		id := fmt.Sprintf("n%d", i)
		out[i] = Item{ID: id, Title: id, Digest: id}
	}
	return out
}

func TestReminders_BoundDefersDeadlinesWithoutLosingThem(t *testing.T) {
	due := t0.Add(100 * time.Hour)
	var items []Item
	for i := range 5 {
		items = append(items, dueItem(fmt.Sprintf("a%d", i), due))
	}
	o := Options{RemindBefore: offsets.RemindBefore, MaxEvents: 2}
	s := baselined(t, items)
	now := due.Add(-20 * time.Hour)
	var got []string
	for _, wantDeferred := range []int{3, 1, 0} {
		d := Reminders(s, now, o)
		if d.Deferred != wantDeferred {
			t.Fatalf("deferred %d, want %d", d.Deferred, wantDeferred)
		}
		got = append(got, identities(d.Events)...)
		s = roundTrip(t, d.Next)
	}
	var want []string
	for i := range 5 {
		want = append(want, deadlineID(fmt.Sprintf("a%d", i), due, 24*time.Hour))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestRemindersWithoutOffsetsOrSnapshot(t *testing.T) {
	due := t0.Add(time.Hour)
	s := baselined(t, []Item{dueItem("a", due)})
	if d := Reminders(s, t0, Options{}); len(d.Events) != 0 || d.Next == nil {
		t.Fatalf("%+v", d)
	}
	if d := Reminders(nil, t0, offsets); len(d.Events) != 0 || d.Next != nil {
		t.Fatalf("%+v", d)
	}
	if _, ok := NextWake(nil, t0, offsets); ok {
		t.Fatal("wake for no snapshot")
	}
	// Non-positive and repeated offsets are ignored.
	o := Options{RemindBefore: []time.Duration{0, -time.Hour, 2 * time.Hour, 2 * time.Hour}}
	assertIdentities(t, Reminders(s, t0, o).Events, deadlineID("a", due, 2*time.Hour))
}

func TestNextWakeIsTheEarliestPendingInstant(t *testing.T) {
	a, b := t0.Add(100*time.Hour), t0.Add(30*time.Hour)
	d := compute(t, nil, []Item{dueItem("a", a), dueItem("b", b)}, t0, offsets)
	assertIdentities(t, d.Events, deadlineID("b", b, 72*time.Hour))
	s := d.Next
	wake, ok := NextWake(s, t0, offsets)
	if !ok || !wake.Equal(b.Add(-24*time.Hour)) {
		t.Fatalf("wake %v %v", wake, ok)
	}
	// Reminders does not modify s.
	before := mustEncode(t, s)
	Reminders(s, wake, offsets)
	if string(before) != string(mustEncode(t, s)) {
		t.Fatal("Reminders modified its snapshot")
	}
}

func TestNextWake_ReportsAReminderAlreadyDue(t *testing.T) {
	due := t0.Add(100 * time.Hour)
	bDue := due.Add(20 * time.Minute)
	s := baselined(t, []Item{dueItem("a", due), dueItem("b", bDue)})
	// Down from due-100h to due-90m: both are inside their 2h window.
	now := due.Add(-90 * time.Minute)
	wake, ok := NextWake(s, now, offsets)
	if !ok || !wake.Equal(due.Add(-2*time.Hour)) {
		t.Fatalf("wake %v %v, want due-2h", wake, ok)
	}
	// Bounded to one event per wake-up: the other is still reported.
	o := Options{RemindBefore: offsets.RemindBefore, MaxEvents: 1}
	d := Reminders(s, now, o)
	assertIdentities(t, d.Events, deadlineID("a", due, 2*time.Hour))
	if d.Deferred != 1 {
		t.Fatalf("deferred %d", d.Deferred)
	}
	wake, ok = NextWake(d.Next, now, o)
	if !ok || wake.After(now) {
		t.Fatalf("deferred reminder not reported: %v %v", wake, ok)
	}
	d = Reminders(d.Next, now, o)
	assertIdentities(t, d.Events, deadlineID("b", bDue, 2*time.Hour))
	if wake, ok := NextWake(d.Next, now, o); ok {
		t.Fatalf("wake %v after every reminder was sent", wake)
	}
}
