package schedule

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics, that every accepted schedule
// re-parses from its canonical text to the same canonical text, and that
// Next moves forward.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"every 30m", "every 1d12h", "every 1.5 hours", "daily 08:00 Asia/Shanghai", "daily 8:30pm",
		"at 2026-12-01T09:00:00+08:00", "at 2026-03-08 02:30 America/New_York", "cron */15 9-17 * * MON-FRI",
		"cron 0 0 1 * 1 Europe/London", "cron @weekly", "每天 ０８：００", "每 30 分钟", "每小时", "每天 晚上9点半",
		"daily 08:00 CST", "every 30s", "cron 0 0 30 2 *", "weekly mon,thu 08:00 Europe/Berlin", "每周一、四 下午3点",
	} {
		f.Add(s)
	}
	sh, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		f.Fatal(err)
	}
	from := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text, sh)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) && !errors.Is(err, ErrNoSuchTime) {
				t.Fatalf("Parse(%q) error %v is neither a ParseError nor ErrNoSuchTime", text, err)
			}
			return
		}
		again, err := Parse(s.String(), sh)
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", s, text, err)
		}
		if again.String() != s.String() || again.Kind() != s.Kind() {
			t.Fatalf("canonical %q re-parses as %q", s, again)
		}
		next, err := s.Next(from)
		if err == nil && !next.After(from) {
			t.Fatalf("%q: Next(%s) = %s", s, from, next)
		}
	})
}
