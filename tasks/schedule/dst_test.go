package schedule

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func mustParse(t testing.TB, text string, def *time.Location) Schedule {
	t.Helper()
	s, err := Parse(text, def)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return s
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDailyZoneRules walks daily schedules across real DST transitions:
// gaps run at the first existing minute after the wall time, overlaps run
// once at the first occurrence.
func TestDailyZoneRules(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		after    string
		want     []string // successive fires, RFC3339 with the local offset
	}{
		{
			name:     "New York spring-forward gap runs at 03:00 EDT",
			schedule: "daily 02:30 America/New_York",
			after:    "2026-03-07T12:00:00-05:00",
			want:     []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"},
		},
		{
			name:     "New York fall-back overlap runs once at the EDT occurrence",
			schedule: "daily 01:30 America/New_York",
			after:    "2026-10-31T12:00:00-04:00",
			want:     []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"},
		},
		{
			name:     "New York overlap second pass does not fire again",
			schedule: "daily 01:30 America/New_York",
			after:    "2026-11-01T01:10:00-05:00", // after the first 01:30, before the second
			want:     []string{"2026-11-02T01:30:00-05:00"},
		},
		{
			name:     "London spring-forward gap runs at 02:00 BST",
			schedule: "daily 01:30 Europe/London",
			after:    "2026-03-28T12:00:00Z",
			want:     []string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"},
		},
		{
			name:     "London fall-back overlap runs once at the BST occurrence",
			schedule: "daily 01:30 Europe/London",
			after:    "2026-10-24T12:00:00+01:00",
			want:     []string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"},
		},
		{
			name:     "Lord Howe 30-minute gap: 02:15 runs at 02:30 +11",
			schedule: "daily 02:15 Australia/Lord_Howe",
			after:    "2026-10-03T12:00:00+10:30",
			want:     []string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"},
		},
		{
			name:     "Lord Howe 30-minute overlap: 01:45 runs once at +11",
			schedule: "daily 01:45 Australia/Lord_Howe",
			after:    "2026-04-04T12:00:00+11:00",
			want:     []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"},
		},
		{
			name:     "Shanghai has no DST",
			schedule: "daily 08:00 Asia/Shanghai",
			after:    "2026-11-29T08:00:00+08:00",
			want:     []string{"2026-11-30T08:00:00+08:00", "2026-12-01T08:00:00+08:00"},
		},
		{
			name:     "Apia skipped 2011-12-30: one run on 31 December, not two",
			schedule: "daily 08:00 Pacific/Apia",
			after:    "2011-12-29T09:00:00-10:00",
			want:     []string{"2011-12-31T00:00:00+14:00", "2012-01-01T08:00:00+14:00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.schedule, time.UTC)
			at := mustTime(t, tt.after)
			for i, w := range tt.want {
				got, err := s.Next(at)
				if err != nil {
					t.Fatalf("fire %d: Next(%s): %v", i, at, err)
				}
				if want := mustTime(t, w); !got.Equal(want) || got.Format(time.RFC3339) != w {
					t.Fatalf("fire %d: Next(%s) = %s, want %s", i, at.Format(time.RFC3339), got.Format(time.RFC3339), w)
				}
				at = got
			}
		})
	}
}

// TestCronZoneRules checks cron wall times under the same gap and overlap
// rules as daily.
func TestCronZoneRules(t *testing.T) {
	s := mustParse(t, "cron 30 * * * * America/New_York", time.UTC)
	at := mustTime(t, "2026-11-01T00:00:00-04:00")
	want := []string{
		"2026-11-01T00:30:00-04:00",
		"2026-11-01T01:30:00-04:00", // first 01:30 only
		"2026-11-01T02:30:00-05:00",
	}
	for i, w := range want {
		got, err := s.Next(at)
		if err != nil {
			t.Fatal(err)
		}
		if got.Format(time.RFC3339) != w {
			t.Fatalf("fire %d = %s, want %s", i, got.Format(time.RFC3339), w)
		}
		at = got
	}
	s = mustParse(t, "cron 30 2 * * * America/New_York", time.UTC)
	got, err := s.Next(mustTime(t, "2026-03-07T12:00:00-05:00"))
	if err != nil || got.Format(time.RFC3339) != "2026-03-08T03:00:00-04:00" {
		t.Fatalf("cron in gap = %s, %v; want 2026-03-08T03:00:00-04:00", got.Format(time.RFC3339), err)
	}
}

// TestAtInGap resolves a local `at` time in a gap forward.
func TestAtInGap(t *testing.T) {
	s := mustParse(t, "at 2026-03-08 02:30 America/New_York", time.UTC)
	got, err := s.Next(time.Time{})
	if err != nil || got.Format(time.RFC3339) != "2026-03-08T03:00:00-04:00" {
		t.Fatalf("Next = %s, %v", got.Format(time.RFC3339), err)
	}
	if _, err := s.Next(got); !errors.Is(err, ErrNoMore) {
		t.Fatalf("second Next error = %v, want ErrNoMore", err)
	}
}

// tzif builds TZif (version 1) bytes for a zone with one transition from
// offset 0 to offset jump at instant at.
func tzif(at time.Time, jump time.Duration) []byte {
	be := binary.BigEndian
	var b []byte
	b = append(b, "TZif"...)
	b = append(b, make([]byte, 16)...)   // version 1 + reserved
	counts := []uint32{0, 0, 0, 1, 2, 8} // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
	for _, c := range counts {
		b = be.AppendUint32(b, c)
	}
	b = be.AppendUint32(b, uint32(int32(at.Unix()))) // transition time
	b = append(b, 1)                                 // -> type 1
	b = be.AppendUint32(b, 0)                        // type 0: UTC
	b = append(b, 0, 0)
	b = be.AppendUint32(b, uint32(int32(jump/time.Second))) // type 1: jumped offset
	b = append(b, 0, 4)
	b = append(b, "AAA\x00BBB\x00"...)
	return b
}

// TestDailyNoSuchTime builds a zone whose clocks jump five days ahead, so a
// daily time has no existing minute within 3 days: Next fails with
// ErrNoSuchTime, classified so the manager does not retry it.
func TestDailyNoSuchTime(t *testing.T) {
	jumpAt := mustTime(t, "2026-06-01T00:00:00Z")
	loc, err := time.LoadLocationFromTZData("Test/Jump", tzif(jumpAt, 5*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Unix(jumpAt.Unix(), 0).In(loc).Format("2006-01-02 15:04"); got != "2026-06-06 00:00" {
		t.Fatalf("hand-built zone: transition reads %s, want 2026-06-06 00:00", got)
	}
	s := Daily{Hour: 8, Location: loc}
	before := mustTime(t, "2026-05-31T09:00:00Z")
	_, err = s.Next(before)
	if !errors.Is(err, ErrNoSuchTime) {
		t.Fatalf("Next = %v, want ErrNoSuchTime", err)
	}
	if c := watch.ClassOf(err); c != watch.Schema {
		t.Fatalf("class = %s, want %s", c, watch.Schema)
	}
	// After the jump the schedule runs normally again. The run planned for
	// 3 June moved to 6 June 00:00 (the first minute after the jump within
	// 3 days), so 6 June gets no second run.
	got, err := s.Next(jumpAt.Add(time.Hour))
	if err != nil || got.In(loc).Format("2006-01-02 15:04") != "2026-06-07 08:00" {
		t.Fatalf("after the jump: %s, %v", got.In(loc), err)
	}
	// A zone with a jump shorter than 3 days still finds a minute.
	loc2, err := time.LoadLocationFromTZData("Test/Jump2", tzif(jumpAt, 48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got, err = Daily{Hour: 8, Location: loc2}.Next(before)
	if err != nil || got.In(loc2).Format("2006-01-02 15:04") != "2026-06-03 00:00" {
		t.Fatalf("short jump: %s, %v", got.In(loc2), err)
	}
	// `at` inside the long jump is refused when parsed.
	if _, err := Parse("at 2026-06-02 08:00", loc); !errors.Is(err, ErrNoSuchTime) {
		t.Fatalf("Parse at in jump = %v, want ErrNoSuchTime", err)
	}
}
