package schedule

import (
	"testing"
	"time"
)

func TestWeeklyForms(t *testing.T) {
	sh, _ := time.LoadLocation("Asia/Shanghai")
	tests := []struct{ in, canon string }{
		{"weekly mon 08:00", "weekly mon 08:00 Asia/Shanghai"},
		{"weekly on Monday at 8:00", "weekly mon 08:00 Asia/Shanghai"},
		{"weekly mondays 08:00", "weekly mon 08:00 Asia/Shanghai"},
		{"weekly thu,mon 18:30 Europe/Berlin", "weekly mon,thu 18:30 Europe/Berlin"},
		{"every friday 17:00", "weekly fri 17:00 Asia/Shanghai"},
		{"每周一 08:00", "weekly mon 08:00 Asia/Shanghai"},
		{"每週五 下午3点", "weekly fri 15:00 Asia/Shanghai"},
		{"每星期日 20:00", "weekly sun 20:00 Asia/Shanghai"},
		{"每周一、四 ０８：００", "weekly mon,thu 08:00 Asia/Shanghai"},
		{"每礼拜六 9点半 UTC", "weekly sat 09:30 UTC"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.in, sh)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if s.Kind() != KindWeekly || s.String() != tt.canon {
			t.Errorf("Parse(%q) = %s %q, want %q", tt.in, s.Kind(), s, tt.canon)
		}
		again, err := Parse(s.String(), time.UTC)
		if err != nil || again.String() != s.String() {
			t.Errorf("canonical %q does not parse back: %v %v", s, again, err)
		}
	}
}

func TestWeeklyNextRunsOnTheNamedDaysOnly(t *testing.T) {
	sh, _ := time.LoadLocation("Asia/Shanghai")
	s, err := Parse("weekly mon,thu 08:00", sh)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, sh) // a Tuesday
	want := []string{"2026-12-03 08:00 Thu", "2026-12-07 08:00 Mon", "2026-12-10 08:00 Thu", "2026-12-14 08:00 Mon"}
	for _, w := range want {
		next, err := s.Next(at)
		if err != nil {
			t.Fatal(err)
		}
		if got := next.In(sh).Format("2006-01-02 15:04 Mon"); got != w {
			t.Fatalf("Next(%s) = %s, want %s", at, got, w)
		}
		at = next
	}
}

// TestWeeklyDSTGapRunsAtTheFirstExistingMinute: 02:30 does not exist in
// Berlin on Sunday 2026-03-29; that week's run is at 03:00, once.
func TestWeeklyDSTGapRunsAtTheFirstExistingMinute(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	s, err := Parse("weekly sun 02:30 Europe/Berlin", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	next, err := s.Next(time.Date(2026, 3, 28, 12, 0, 0, 0, berlin))
	if err != nil {
		t.Fatal(err)
	}
	if got := next.In(berlin).Format("2006-01-02 15:04"); got != "2026-03-29 03:00" {
		t.Errorf("gap run at %s", got)
	}
	after, _ := s.Next(next)
	if got := after.In(berlin).Format("2006-01-02 15:04"); got != "2026-04-05 02:30" {
		t.Errorf("next week's run at %s", got)
	}
}
