package watch

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSummary_BoundedOnACharacter(t *testing.T) {
	long := strings.Repeat("期末考试安排 ", 100)
	cases := []struct {
		name, text, title, want string
	}{
		{"plain", "  The exam moves\n to Friday. ", "Exam", "The exam moves to Friday."},
		{"repeats the title", "Exam  notice", "Exam notice", ""},
		{"empty", " \n ", "x", ""},
		{"the title was cut from the text", "A long notice about the exam room", "A long notice…", "… about the exam room"},
	}
	for _, c := range cases {
		if got := Summary(c.text, c.title); got != c.want {
			t.Errorf("%s: Summary = %q, want %q", c.name, got, c.want)
		}
	}
	got := Summary(long, "")
	if n := utf8.RuneCountInString(got); n > SummaryMax || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("long summary: %d characters, valid %v, %q", n, utf8.ValidString(got), got)
	}
}

func TestCompute_ChangedItemCarriesItsChangedLines(t *testing.T) {
	page := func(lines ...string) Item {
		return Item{ID: "https://dept.example.edu/n/1", Title: "Exam", Digest: strings.Join(lines, "|"), Lines: Lines(strings.Join(lines, "\n")), Summary: Summary(strings.Join(lines, " "), "Exam")}
	}
	prev := Compute(nil, []Item{page("Exam", "Room 101", "Monday 9:00")}, t0, Options{}).Next
	d := compute(t, prev, []Item{page("Exam", "Room 204", "Monday 9:00", "Bring ID")}, t0, Options{})
	if len(d.Events) != 1 || d.Events[0].Kind != EventChanged {
		t.Fatalf("events = %+v", d.Events)
	}
	ev := d.Events[0]
	if !slices.Equal(ev.Added, []string{"Room 204", "Bring ID"}) || !slices.Equal(ev.Removed, []string{"Room 101"}) {
		t.Fatalf("added %q removed %q", ev.Added, ev.Removed)
	}
	if ev.Item.Summary != "Room 204 Monday 9:00 Bring ID" {
		t.Fatalf("summary %q", ev.Item.Summary)
	}
	if got := d.Next.Items[ev.Item.ID].Lines; len(got) != 4 {
		t.Fatalf("next snapshot keeps lines %q", got)
	}
}

func TestLineDiff_BoundedEachWay(t *testing.T) {
	var before, after []string
	for i := range 50 {
		before = append(before, "old "+strings.Repeat("x", i))
		after = append(after, "new "+strings.Repeat("x", i))
	}
	added, removed := lineDiff(before, after)
	if len(added) != DiffMaxLines || len(removed) != DiffMaxLines {
		t.Fatalf("added %d removed %d", len(added), len(removed))
	}
}
