package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseCanonical(t *testing.T) {
	sh := mustZone(t, "Asia/Shanghai")
	tests := []struct {
		in, want, kind string
	}{
		{"every 30m", "every 30m", KindEvery},
		{"  every   30m  ", "every 30m", KindEvery},
		{"EVERY 2h", "every 2h", KindEvery},
		{"every 90m", "every 1h30m", KindEvery},
		{"every 1h30m", "every 1h30m", KindEvery},
		{"every 1h 30m", "every 1h30m", KindEvery},
		{"every 1.5h", "every 1h30m", KindEvery},
		{"every 1d", "every 1d", KindEvery},
		{"every 24h", "every 1d", KindEvery},
		{"every 1d12h", "every 36h", KindEvery},
		{"every 30 minutes", "every 30m", KindEvery},
		{"every 2 hours", "every 2h", KindEvery},
		{"every hour", "every 1h", KindEvery},
		{"every 1m", "every 1m", KindEvery},
		{"every 90s", "every 1m30s", KindEvery},
		{"every １０m", "every 10m", KindEvery},
		{"每 30 分钟", "every 30m", KindEvery},
		{"每30分钟", "every 30m", KindEvery},
		{"每隔30分钟", "every 30m", KindEvery},
		{"每 2 小时", "every 2h", KindEvery},
		{"每2個小時", "every 2h", KindEvery},
		{"每小时", "every 1h", KindEvery},
		{"每半小时", "every 30m", KindEvery},
		{"每 2 天", "every 2d", KindEvery},
		{"daily 08:00", "daily 08:00 Asia/Shanghai", KindDaily},
		{"daily 8:00", "daily 08:00 Asia/Shanghai", KindDaily},
		{"daily at 21:30", "daily 21:30 Asia/Shanghai", KindDaily},
		{"daily 8am", "daily 08:00 Asia/Shanghai", KindDaily},
		{"daily 12am", "daily 00:00 Asia/Shanghai", KindDaily},
		{"daily 8:30pm Europe/London", "daily 20:30 Europe/London", KindDaily},
		{"Daily 08:00 America/New_York", "daily 08:00 America/New_York", KindDaily},
		{"daily 00:00 UTC", "daily 00:00 UTC", KindDaily},
		{"daily 07:00 america/new_york", "daily 07:00 America/New_York", KindDaily},
		{"每天 08:00", "daily 08:00 Asia/Shanghai", KindDaily},
		{"每天08:00", "daily 08:00 Asia/Shanghai", KindDaily},
		{"每日 20:30", "daily 20:30 Asia/Shanghai", KindDaily},
		{"每天　０８：００", "daily 08:00 Asia/Shanghai", KindDaily},
		{"每天 早上8点", "daily 08:00 Asia/Shanghai", KindDaily},
		{"每天 早上 8 点", "daily 08:00 Asia/Shanghai", KindDaily},
		{"每天 晚上9点半", "daily 21:30 Asia/Shanghai", KindDaily},
		{"每天 下午3点15分", "daily 15:15 Asia/Shanghai", KindDaily},
		{"每天 中午12点", "daily 12:00 Asia/Shanghai", KindDaily},
		{"每天 08:00 Europe/Berlin", "daily 08:00 Europe/Berlin", KindDaily},
		{"at 2026-12-01T09:00:00+08:00", "at 2026-12-01T09:00:00+08:00", KindAt},
		{"at 2026-12-01T01:00:00Z", "at 2026-12-01T01:00:00Z", KindAt},
		{"at 2026-12-01 09:00", "at 2026-12-01 09:00 Asia/Shanghai", KindAt},
		{"at 2026-12-01 09:00:30", "at 2026-12-01 09:00:30 Asia/Shanghai", KindAt},
		{"at 2026-12-01T09:00", "at 2026-12-01 09:00 Asia/Shanghai", KindAt},
		{"at 2026-12-01 09:00 Europe/Paris", "at 2026-12-01 09:00 Europe/Paris", KindAt},
		{"cron 0 9 * * 1-5", "cron 0 9 * * 1-5 Asia/Shanghai", KindCron},
		{"cron 0 9 * * mon-fri Europe/London", "cron 0 9 * * MON-FRI Europe/London", KindCron},
		{"cron */15 8-18 * jan,jul sun", "cron */15 8-18 * JAN,JUL SUN Asia/Shanghai", KindCron},
		{"cron @hourly", "cron @hourly Asia/Shanghai", KindCron},
		{"cron @daily UTC", "cron @daily UTC", KindCron},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := Parse(tt.in, sh)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if s.String() != tt.want || s.Kind() != tt.kind {
				t.Fatalf("got %q (%s), want %q (%s)", s, s.Kind(), tt.want, tt.kind)
			}
			again, err := Parse(s.String(), time.UTC) // canonical text carries its zone
			if err != nil || again.String() != s.String() {
				t.Fatalf("re-parse of %q: %v, %v", s, again, err)
			}
			from := mustTime(t, "2026-11-29T12:00:00Z")
			a, err1 := s.Next(from)
			b, err2 := again.Next(from)
			if !a.Equal(b) || (err1 == nil) != (err2 == nil) {
				t.Fatalf("re-parsed schedule differs: %s %v vs %s %v", a, err1, b, err2)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // substring of the message
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"weekly 08:00", "needs a day and a time"},
		{"every", "needs an interval"},
		{"every 30s", "at least 1m"},
		{"every 0m", "at least 1m"},
		{"every 30x", "unknown interval unit"},
		{"every 30", "needs a unit"},
		{"every 400d", "longer than 366d"},
		{"every -5m", "unknown interval unit"},
		{"daily", "needs a time"},
		{"daily 25:00", "24-hour clock"},
		{"daily 08:60", "24-hour clock"},
		{"daily 0800", "24-hour clock"},
		{"daily 13pm", "24-hour clock"},
		{"daily 08:00 CST", "abbreviation"},
		{"daily 08:00 Mars/Olympus", "unknown time zone"},
		{"daily 08:00 Asia/../etc", "unknown time zone"},
		{"daily 08:00 Local", "24-hour clock"},
		{"at", "needs a time"},
		{"at tomorrow", "needs a time"},
		{"at 2026-13-01 09:00", "needs a time"},
		{"cron 0 9 * *", "5 fields"},
		{"cron 60 9 * * *", "values must be 0-59"},
		{"cron 0 9 * * 8", "values must be 0-7"},
		{"cron 0 9 * FOO *", "names like JAN"},
		{"cron 0 9-5 * * *", "backwards"},
		{"cron */0 * * * *", "bad step"},
		{"cron 0 0 30 2 *", "never occurs"},
		{"cron @reboot", "5 fields"},
		{"每天", "needs a time"},
		{"每", "needs an interval"},
		{"每 30 秒", "at least 1m"},
		{"每天 25点", "24-hour clock"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in, time.UTC)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error = %v, want *ParseError", tt.in, err)
			}
			if !strings.Contains(pe.Msg, tt.want) {
				t.Fatalf("message %q does not contain %q", pe.Msg, tt.want)
			}
			if pe.Pos < 0 || pe.Pos > len([]rune(pe.Text)) {
				t.Fatalf("position %d outside %q", pe.Pos, pe.Text)
			}
		})
	}
}

func TestEveryAndAt(t *testing.T) {
	end := mustTime(t, "2026-11-29T12:00:07Z")
	got, err := mustParse(t, "every 30m", nil).Next(end)
	if err != nil || !got.Equal(end.Add(30*time.Minute)) {
		t.Fatalf("every: %s, %v (measured from the end of the last run)", got, err)
	}
	at := mustParse(t, "at 2026-12-01T09:00:00+08:00", nil)
	want := mustTime(t, "2026-12-01T01:00:00Z")
	if got, err := at.Next(want.Add(-time.Second)); err != nil || !got.Equal(want) {
		t.Fatalf("at before: %s, %v", got, err)
	}
	if _, err := at.Next(want); !errors.Is(err, ErrNoMore) {
		t.Fatalf("at fired: %v, want ErrNoMore", err)
	}
}

func TestCronFields(t *testing.T) {
	utc := time.UTC
	tests := []struct {
		expr  string
		after string
		want  []string
	}{
		{"cron 0 9 * * 1-5", "2026-11-27T10:00:00Z", []string{"2026-11-30T09:00:00Z", "2026-12-01T09:00:00Z"}}, // Fri → Mon
		{"cron */20 * * * *", "2026-11-29T12:00:00Z", []string{"2026-11-29T12:20:00Z", "2026-11-29T12:40:00Z", "2026-11-29T13:00:00Z"}},
		{"cron 5,10-12 3 * * *", "2026-11-29T00:00:00Z", []string{"2026-11-29T03:05:00Z", "2026-11-29T03:10:00Z", "2026-11-29T03:11:00Z", "2026-11-29T03:12:00Z", "2026-11-30T03:05:00Z"}},
		// Vixie: both day fields restricted → either matches (1st of month OR Monday).
		{"cron 0 0 1 * MON", "2026-11-29T00:00:00Z", []string{"2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-07T00:00:00Z"}},
		{"cron 0 0 13 * *", "2026-11-29T00:00:00Z", []string{"2026-12-13T00:00:00Z"}},
		// A field starting with "*" counts as starred, as in Vixie cron, so
		// */10 with FRI means both: the 1st/11th/21st/31st that is a Friday.
		{"cron 0 0 */10 * FRI", "2026-11-29T00:00:00Z", []string{"2026-12-11T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"cron 0 0 * * 7", "2026-11-29T00:00:00Z", []string{"2026-12-06T00:00:00Z"}}, // 7 is Sunday
		{"cron 0 12 29 2 *", "2026-11-29T00:00:00Z", []string{"2028-02-29T12:00:00Z"}},
		{"cron 0 0 1 jan *", "2026-11-29T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			s := mustParse(t, tt.expr, utc)
			at := mustTime(t, tt.after)
			for i, w := range tt.want {
				got, err := s.Next(at)
				if err != nil || got.UTC().Format(time.RFC3339) != w {
					t.Fatalf("fire %d after %s = %s, %v; want %s", i, at, got.UTC().Format(time.RFC3339), err, w)
				}
				at = got
			}
		})
	}
}
