package conversation

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const bot = "herald_bot"

func shanghai(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseCommands(t *testing.T) {
	h := time.Hour
	tests := []struct {
		in   string
		want Command // Args are not compared; Addressed defaults to true
		code string  // expected ParseError code
	}{
		// Plain commands, typed every way people type them.
		{in: "/help", want: Command{Name: "help"}},
		{in: "/start", want: Command{Name: "help"}},
		{in: "/help watch", want: Command{Name: "help"}},
		{in: "  /tasks  ", want: Command{Name: "tasks"}},
		{in: "\u3000/tasks\u3000", want: Command{Name: "tasks"}},
		{in: "／tasks", want: Command{Name: "tasks"}},
		{in: "/TASKS", want: Command{Name: "tasks"}},
		{in: "/tasks@herald_bot", want: Command{Name: "tasks"}},
		{in: "/tasks@Herald_Bot", want: Command{Name: "tasks"}},
		{in: "/tasks@other_bot", want: Command{Name: "tasks", Addressed: false}},
		{in: "/whatever@other_bot junk", want: Command{Name: "whatever", Addressed: false}},
		{in: "@herald_bot /inbox", want: Command{Name: "inbox"}},
		{in: "/task t-7f3a", want: Command{Name: "task", ID: "t-7f3a"}},
		{in: "/pause   campus-news", want: Command{Name: "pause", ID: "campus-news"}},
		{in: "/resume campus-news", want: Command{Name: "resume", ID: "campus-news"}},
		{in: "/delete t-1", want: Command{Name: "delete", ID: "t-1"}},
		{in: "/run t-1", want: Command{Name: "run", ID: "t-1"}},
		{in: "/approve r-7f3a", want: Command{Name: "approve", ID: "r-7f3a"}},
		{in: "/approve@herald_bot r-7f3a", want: Command{Name: "approve", ID: "r-7f3a"}},
		{in: "/reject r-7f3a", want: Command{Name: "reject", ID: "r-7f3a"}},
		{in: "/reject r-7f3a host not allowed here", want: Command{Name: "reject", ID: "r-7f3a", Reason: "host not allowed here"}},
		{in: `/reject r-7f3a "duplicate of campus-news"`, want: Command{Name: "reject", ID: "r-7f3a", Reason: "duplicate of campus-news"}},
		{in: "/inbox", want: Command{Name: "inbox"}},
		{in: "/read 42", want: Command{Name: "read", ID: "42"}},
		{in: "/read all", want: Command{Name: "read", ID: "all"}},
		{in: "/read ALL", want: Command{Name: "read", ID: "all"}},
		{in: "/mute t-1 2h", want: Command{Name: "mute", ID: "t-1", Duration: 2 * h}},
		{in: "/mute t-1 1d", want: Command{Name: "mute", ID: "t-1", Duration: 24 * h}},
		{in: "/mute t-1 90 minutes", want: Command{Name: "mute", ID: "t-1", Duration: 90 * time.Minute}},
		{in: "/mute t-1 off", want: Command{Name: "mute", ID: "t-1"}},
		{in: "/quiet 22:00-07:00", want: Command{Name: "quiet", Quiet: "22:00-07:00"}},
		{in: "/quiet 22:00 - 7:00", want: Command{Name: "quiet", Quiet: "22:00-07:00"}},
		{in: "/quiet ２２：００–０７：００", want: Command{Name: "quiet", Quiet: "22:00-07:00"}},
		{in: "/quiet off", want: Command{Name: "quiet", Quiet: "off"}},
		{in: "/digest off", want: Command{Name: "digest", Schedule: "off"}},
		{in: "/cancel", want: Command{Name: "cancel"}},

		// /watch in every order and dress.
		{in: "/watch https://news.example.edu/feed.xml", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml"}},
		{in: "/watch https://news.example.edu/feed.xml every 30m", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 30m"}},
		{in: "/watch https://news.example.edu/feed.xml daily 08:00", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "daily 08:00 Asia/Shanghai"}},
		{in: "/watch https://news.example.edu/feed.xml daily 08:00 Europe/London as rss", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "daily 08:00 Europe/London", Kind: "rss"}},
		{in: `/watch https://news.example.edu/feed.xml as rss every 2h name "Campus news"`, want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 2h", Kind: "rss", TaskName: "Campus news"}},
		{in: `/watch https://news.example.edu/feed.xml name “Campus news” every 2h`, want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 2h", TaskName: "Campus news"}},
		{in: "/watch https://news.example.edu/feed.xml name 「校园新闻」 每天 08:00", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "daily 08:00 Asia/Shanghai", TaskName: "校园新闻"}},
		{in: "/watch https://news.example.edu/feed.xml name 校园新闻 每 30 分钟", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 30m", TaskName: "校园新闻"}},
		{in: "/watch https://news.example.edu/feed.xml 每30分钟", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 30m"}},
		{in: "/watch https://news.example.edu/feed.xml 每天08:00", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "daily 08:00 Asia/Shanghai"}},
		{in: "/watch https://news.example.edu/feed.xml 每天　０８：００", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "daily 08:00 Asia/Shanghai"}},
		{in: "/WATCH https://news.example.edu/feed.xml EVERY 1H AS RSS", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 1h", Kind: "rss"}},
		{in: "/watch@herald_bot https://api.example.com/releases?per_page=5&page=1 as json", want: Command{Name: "watch", URL: "https://api.example.com/releases?per_page=5&page=1", Kind: "json"}},
		{in: "/watch HTTPS://News.Example.EDU/Feed.xml", want: Command{Name: "watch", URL: "https://news.example.edu/Feed.xml"}},
		{in: "/watch <https://news.example.edu/feed.xml>", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml"}},
		{in: "/watch https://dept.example.edu/notices as html at 2026-12-01 09:00", want: Command{Name: "watch", URL: "https://dept.example.edu/notices", Kind: "html", Schedule: "at 2026-12-01 09:00 Asia/Shanghai"}},
		{in: "/watch https://dept.example.edu/notices at 2026-12-01T09:00:00+08:00", want: Command{Name: "watch", URL: "https://dept.example.edu/notices", Schedule: "at 2026-12-01T09:00:00+08:00"}},
		{in: "/watch https://dept.example.edu/notices cron 0 9 * * 1-5", want: Command{Name: "watch", URL: "https://dept.example.edu/notices", Schedule: "cron 0 9 * * 1-5 Asia/Shanghai"}},
		{in: "/watch https://lms.example.edu/cal.ics as ics", want: Command{Name: "watch", URL: "https://lms.example.edu/cal.ics", Kind: "ical"}},
		// RSSHub routes (SPEC §18), in both languages and both orders.
		{in: "/watch rsshub:/ustc/jwc/info every 1h", want: Command{Name: "watch", URL: "rsshub:/ustc/jwc/info", Kind: "rsshub", Schedule: "every 1h"}},
		{in: "/watch RSSHub:/github/issue/DIYgod/RSSHub?limit=5", want: Command{Name: "watch", URL: "rsshub:/github/issue/DIYgod/RSSHub?limit=5", Kind: "rsshub"}},
		{in: "/watch rsshub /ustc/jwc/info", want: Command{Name: "watch", URL: "rsshub:/ustc/jwc/info", Kind: "rsshub"}},
		{in: "/关注 rsshub:/ustc/jwc/info 每 1 小时", want: Command{Name: "watch", URL: "rsshub:/ustc/jwc/info", Kind: "rsshub", Schedule: "every 1h"}},
		{in: "/watch rsshub:ustc/jwc", code: CodeBadURL},
		{in: "/watch rsshub:/a/../b", code: CodeBadURL},
		{in: "/订阅 https://news.example.edu/feed.xml 每小时", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 1h"}},
		{in: "/watch every 30m https://news.example.edu/feed.xml", want: Command{Name: "watch", URL: "https://news.example.edu/feed.xml", Schedule: "every 30m"}},

		// /remind.
		{in: "/remind https://lms.example.edu/cal.ics", want: Command{Name: "remind", URL: "https://lms.example.edu/cal.ics"}},
		{in: "/remind https://lms.example.edu/cal.ics before 72h,24h,2h", want: Command{Name: "remind", URL: "https://lms.example.edu/cal.ics", Before: []time.Duration{72 * h, 24 * h, 2 * h}}},
		{in: "/remind https://lms.example.edu/cal.ics before 2h, 24h, 3d", want: Command{Name: "remind", URL: "https://lms.example.edu/cal.ics", Before: []time.Duration{72 * h, 24 * h, 2 * h}}},
		{in: "/remind https://lms.example.edu/cal.ics before 1d，2h", want: Command{Name: "remind", URL: "https://lms.example.edu/cal.ics", Before: []time.Duration{24 * h, 2 * h}}},
		{in: "/提醒 https://lms.example.edu/cal.ics 提前 1天、2小时", want: Command{Name: "remind", URL: "https://lms.example.edu/cal.ics", Before: []time.Duration{24 * h, 2 * h}}},

		// Mistakes people make.
		{in: "/watch", code: CodeMissingURL},
		{in: "/watch every 30m", code: CodeMissingURL},
		{in: "/watch news.example.edu/feed.xml", code: CodeMissingURL},
		{in: "/watch www.example.edu/feed.xml", code: CodeBadURL},
		{in: "/watch ftp://files.example.edu/feed.xml", code: CodeBadURL},
		{in: "/watch javascript://alert(1)", code: CodeBadURL},
		{in: "/watch https://user:hunter2@news.example.edu/feed.xml", code: CodeBadURL},
		{in: "/watch https://news.example.edu/feed.xml as pdf", code: CodeBadKind},
		{in: "/watch https://news.example.edu/feed.xml as", code: CodeBadKind},
		{in: "/watch https://news.example.edu/feed.xml every 30s", code: CodeBadSchedule},
		{in: "/watch https://news.example.edu/feed.xml daily 25:00", code: CodeBadSchedule},
		{in: "/watch https://news.example.edu/feed.xml daily 08:00 CST", code: CodeBadSchedule},
		{in: "/watch https://news.example.edu/feed.xml every 30m every 1h", code: CodeDuplicate},
		{in: "/watch https://news.example.edu/feed.xml please", code: CodeUnexpected},
		{in: "/watch https://a.example.edu/x https://b.example.edu/y", code: CodeUnexpected},
		{in: `/watch https://news.example.edu/feed.xml name "Campus news`, code: CodeUsage},
		{in: "/watch https://news.example.edu/feed.xml name", code: CodeUsage},
		{in: "/watch https://news.example.edu/feed.xml before 2h", code: CodeUnexpected},
		{in: "/remind https://lms.example.edu/cal.ics before soon", code: CodeBadDuration},
		{in: "/remind https://lms.example.edu/cal.ics before", code: CodeBadDuration},
		{in: "/task", code: CodeUsage},
		{in: "/task t-1 t-2", code: CodeUnexpected},
		{in: "/pause <t-1>", code: CodeBadID},
		{in: "/tasks now", code: CodeUnexpected},
		{in: "/mute t-1", code: CodeUsage},
		{in: "/mute t-1 forever", code: CodeBadDuration},
		{in: "/quiet", code: CodeUsage},
		{in: "/digest", code: CodeUsage},
		{in: "/digest at noon", code: CodeBadSchedule},
		{in: "/quiet 22:00", code: CodeBadQuiet},
		{in: "/quiet 25:00-07:00", code: CodeBadQuiet},
		{in: "/quiet 07:00-07:00", code: CodeBadQuiet},
		{in: "/wacth https://news.example.edu/feed.xml", code: CodeUnknownCommand},
		{in: "/subscribe https://news.example.edu/feed.xml", code: CodeUnknownCommand},
	}
	if len(tests) < 40 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in, bot, shanghai(t))
			if tt.code != "" {
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("error = %v, want ParseError %s (got %+v)", err, tt.code, got)
				}
				if pe.Code != tt.code {
					t.Fatalf("code = %s (%s), want %s", pe.Code, pe.En, tt.code)
				}
				if pe.En == "" || pe.Zh == "" {
					t.Fatalf("missing message: %+v", pe)
				}
				if strings.Contains(pe.En, "hunter2") || strings.Contains(pe.Zh, "hunter2") {
					t.Fatalf("message leaks a credential: %s", pe.En)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := tt.want
			if !strings.Contains(tt.in, "other_bot") {
				want.Addressed = true
			}
			got.Args, got.Parsed = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseNotCommand(t *testing.T) {
	for _, in := range []string{"", "   ", "hello", "remind me of homework a day before", "/", "／", "@herald_bot", "提醒我交作业"} {
		if _, err := Parse(in, bot, nil); !errors.Is(err, ErrNotCommand) {
			t.Errorf("Parse(%q) error = %v, want ErrNotCommand", in, err)
		}
	}
}

func TestParseErrorMessages(t *testing.T) {
	_, err := Parse("/watch https://news.example.edu/feed.xml?token=s3cr3t every 10s", bot, nil)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Code != CodeBadSchedule {
		t.Fatalf("err = %v", err)
	}
	// The schedule parser's message is included, the usage line follows,
	// and the URL's query is never echoed.
	for msg, want := range map[string]string{pe.En: "at least 1m", pe.Zh: "至少 1 分钟"} {
		if !strings.Contains(msg, want) || !strings.Contains(msg, "/watch <") || strings.Contains(msg, "s3cr3t") {
			t.Fatalf("message %q", msg)
		}
	}
	_, err = Parse("/wacth x", bot, nil)
	if !errors.As(err, &pe) || !strings.Contains(pe.En, "/watch") || !strings.Contains(pe.En, "/help") {
		t.Fatalf("unknown command message = %v", err)
	}
}
