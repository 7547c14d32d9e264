package conversation

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/schedule"
)

// FuzzParse checks that Parse never panics, that failures are ErrNotCommand
// or a ParseError with both messages, and that an accepted schedule is
// canonical: parsing it again yields the same text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"/help", "／tasks@herald_bot", "/tasks@other_bot x", "/watch https://news.example.edu/feed.xml every 30m as rss name \"Campus news\"",
		"/watch https://news.example.edu/feed.xml name 「校园新闻」 每天 ０８：００", "/remind https://lms.example.edu/cal.ics before 72h, 24h,2h",
		"/reject r-1 not in scope", "/mute t-1 2h", "/quiet 22:00-07:00", "/read all", "/watch every 30m", "/watch ftp://x",
		"/watch https://a.example/x cron 0 9 * * MON-FRI Europe/London", "/watch https://a.example/x at 2026-03-08 02:30 America/New_York",
	} {
		f.Add(s)
	}
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cmd, err := Parse(text, "herald_bot", loc)
		if err != nil {
			var pe *ParseError
			if !errors.Is(err, ErrNotCommand) && !(errors.As(err, &pe) && pe.Code != "" && pe.En != "" && pe.Zh != "") {
				t.Fatalf("Parse(%q) error %#v", text, err)
			}
			return
		}
		if cmd.Name == "" {
			t.Fatalf("Parse(%q) accepted without a name", text)
		}
		if cmd.Schedule != "" {
			s, err := schedule.Parse(cmd.Schedule, loc)
			if err != nil {
				t.Fatalf("canonical schedule %q from %q does not parse: %v", cmd.Schedule, text, err)
			}
			if s.String() != cmd.Schedule {
				t.Fatalf("schedule %q re-parses as %q", cmd.Schedule, s)
			}
		}
		if (cmd.Name == "watch" || cmd.Name == "remind") && cmd.Addressed && cmd.URL == "" {
			t.Fatalf("Parse(%q): %s without a URL", text, cmd.Name)
		}
	})
}
