package memory

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openBolt(t *testing.T, path string, c *clock) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, bolt.Options{NoSync: true, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newTestKeeper(t *testing.T) (*Keeper, *clock, *bolt.Store) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	s := openBolt(t, filepath.Join(t.TempDir(), "herald.db"), c)
	k, err := New(Options{Store: s.History(), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return k, c, s
}

func record(t *testing.T, k *Keeper, c *clock, principal, chat string, group bool, text, reply string) {
	t.Helper()
	c.Advance(time.Minute)
	if err := k.Record(context.Background(), principal, chat, group, text, reply); err != nil {
		t.Fatal(err)
	}
}

func hits(t *testing.T, k *Keeper, log, q string, page int) []string {
	t.Helper()
	p, err := k.Search(context.Background(), log, q, page)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tr := range p.Turns {
		out = append(out, tr.Text)
	}
	return out
}

func TestTermsAndQuery(t *testing.T) {
	for _, tc := range []struct {
		text  string
		query string
		match bool
	}{
		{"期末考试通知：12月20日", "考试", true},
		{"期末考试通知：12月20日", "试通", true},
		{"期末考试通知：12月20日", "考试通知", true},
		{"期末考试通知", "考", true},
		{"考试 和 通知", "考试通知", false}, // the pairs are there, the phrase is not
		{"考试 和 通知", "考试 通知", true}, // two parts, each present
		{"Please watch the Exam page", "exam", true},
		{"Please watch the Exam page", "EXAM", true},
		{"Please watch the Examination page", "exam", false}, // whole words
		{"Please watch the exam page", `"exam page"`, true},
		{"Please watch the exam-page", `"exam page"`, true}, // punctuation is a space
		{"the page exam", `"exam page"`, false},
		{"ＣＳ１０１ 作业", "cs101", true}, // full width folds
		{"CS101作业截止", "cs101 作业", true},
		{"CS101作业截止", "作业截止", true},
		{"https://news.example.edu/feed.xml every 1h", "example.edu", true},
		{"nothing here", "!!!", false},
	} {
		q := ParseQuery(tc.query)
		terms := Terms(tc.text)
		indexed := !q.Empty()
		for _, term := range q.Terms {
			indexed = indexed && slices.Contains(terms, term)
		}
		if got := indexed && q.Match(tc.text); got != tc.match {
			t.Errorf("%q in %q: %v, want %v (terms %q, query %+v)", tc.query, tc.text, got, tc.match, terms, q)
		}
	}
}

func TestRedactKeepsNoToken(t *testing.T) {
	for _, tc := range []struct{ in, gone, kept string }{
		{"my canvas token is 7~AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEf", "canvas token"},
		{"/watch https://lms.example.edu/api?access_token=s3cr3t&x=1 every 1h", "s3cr3t", "lms.example.edu"},
		{"https://user:pw@host.example.edu/feed", "pw@", "host.example.edu/feed"},
		{"https://canvas.example.edu/feeds/calendars/user_Ab12Cd34Ef56Gh78Ij90Kl.ics", "Ab12Cd34", "canvas.example.edu/feeds/calendars"},
		{"token: abc123", "abc123", "token"},
		{"我的令牌：abcdef", "abcdef", "我的令牌"},
		{"moodle 0123456789abcdef0123456789abcdef", "0123456789abcdef", "moodle"},
		{"Your inbox API token:\nhin_0123456789abcdef0123", "hin_0123", "inbox API token"},
		{"bot token 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "AAHdq", "bot token"},
		{"Authorization: Bearer eyJhbGciOi.payload", "eyJhbGciOi", "Authorization"},
		{"期末考试通知 docs/v2/index.html", "[redacted]", "期末考试通知 docs/v2/index.html"},
	} {
		got := Redact(tc.in)
		if tc.gone == "[redacted]" {
			if strings.Contains(got, Redacted) || got != tc.kept {
				t.Errorf("Redact(%q) = %q, want it unchanged", tc.in, got)
			}
			continue
		}
		if strings.Contains(got, tc.gone) || !strings.Contains(got, tc.kept) {
			t.Errorf("Redact(%q) = %q: want %q gone and %q kept", tc.in, got, tc.gone, tc.kept)
		}
	}
}

func TestChineseTwoCharacterSubstringFound(t *testing.T) {
	k, c, _ := newTestKeeper(t)
	record(t, k, c, "telegram:1", "telegram:chat:1", false, "请提醒我期末考试通知的截止日期", "好的")
	record(t, k, c, "telegram:1", "telegram:chat:1", false, "考查和试卷通知", "好的") // the pairs apart
	if got := hits(t, k, "telegram:1", "考试", 1); !slices.Equal(got, []string{"请提醒我期末考试通知的截止日期"}) {
		t.Fatalf("考试 → %q", got)
	}
	if got := hits(t, k, "telegram:1", "末考", 1); len(got) != 1 {
		t.Fatalf("末考 → %q", got)
	}
	if got := hits(t, k, "telegram:1", "试通", 1); len(got) != 1 {
		t.Fatalf("试通 → %q", got)
	}
	if got := hits(t, k, "telegram:1", "通知", 1); len(got) != 2 {
		t.Fatalf("通知 → %q", got)
	}
	if got := hits(t, k, "telegram:1", "考", 1); len(got) != 2 {
		t.Fatalf("考 → %q", got)
	}
}

func TestEnglishWordFound(t *testing.T) {
	k, c, _ := newTestKeeper(t)
	record(t, k, c, "console:ann", "console:ann", false, "Watch the Exam timetable please", "Request r-1: watch ...")
	record(t, k, c, "console:ann", "console:ann", false, "what about examinations?", "I understand commands.")
	if got := hits(t, k, "console:ann", "exam", 1); !slices.Equal(got, []string{"Watch the Exam timetable please"}) {
		t.Fatalf("exam → %q", got)
	}
	if got := hits(t, k, "console:ann", "TIMETABLE", 1); len(got) != 1 {
		t.Fatalf("TIMETABLE → %q", got)
	}
	// herald's reply is searchable too.
	if got := hits(t, k, "console:ann", "commands", 1); len(got) != 1 {
		t.Fatalf("commands → %q", got)
	}
}

func TestPrincipalsAndChatsNeverMixed(t *testing.T) {
	k, c, _ := newTestKeeper(t)
	record(t, k, c, "telegram:1", "telegram:chat:1", false, "private exam one", "ok")
	record(t, k, c, "telegram:2", "telegram:chat:2", false, "private exam two", "ok")
	record(t, k, c, "telegram:1", "telegram:chat:-100", true, "group exam", "ok")
	if got := hits(t, k, LogOf("telegram:1", "telegram:chat:1", false), "exam", 1); !slices.Equal(got, []string{"private exam one"}) {
		t.Fatalf("telegram:1 in private → %q", got)
	}
	if got := hits(t, k, LogOf("telegram:2", "telegram:chat:-100", true), "exam", 1); !slices.Equal(got, []string{"group exam"}) {
		t.Fatalf("the group → %q", got)
	}
	if got := hits(t, k, LogOf("telegram:2", "telegram:chat:2", false), "exam", 1); !slices.Equal(got, []string{"private exam two"}) {
		t.Fatalf("telegram:2 in private → %q", got)
	}
}

func TestPagesOfTenNewestFirst(t *testing.T) {
	k, c, _ := newTestKeeper(t)
	for i := range 25 {
		record(t, k, c, "console:a", "console:a", false, "作业 "+string(rune('a'+i)), "ok")
	}
	p1, _ := k.Search(context.Background(), "console:a", "作业", 1)
	p3, _ := k.Search(context.Background(), "console:a", "作业", 3)
	if len(p1.Turns) != 10 || !p1.More || p1.Turns[0].Text != "作业 y" || len(p3.Turns) != 5 || p3.More || p3.Turns[4].Text != "作业 a" {
		t.Fatalf("page 1 = %d more %v first %q; page 3 = %d more %v", len(p1.Turns), p1.More, p1.Turns[0].Text, len(p3.Turns), p3.More)
	}
	if _, err := k.Search(context.Background(), "console:a", " !! ", 1); err != ErrEmptyQuery {
		t.Fatalf("empty query: %v", err)
	}
}

func TestForgetLeavesNothingSearchable(t *testing.T) {
	k, c, _ := newTestKeeper(t)
	record(t, k, c, "feishu:ou_a", "feishu:user:ou_a", false, "考试 exam", "ok")
	record(t, k, c, "feishu:ou_b", "feishu:user:ou_b", false, "考试 exam", "ok")
	if n, err := k.Forget(context.Background(), "feishu:ou_a", ""); err != nil || n != 1 {
		t.Fatalf("forget = %d, %v", n, err)
	}
	for _, q := range []string{"考试", "考", "exam", "ok"} {
		if got := hits(t, k, "feishu:ou_a", q, 1); len(got) != 0 {
			t.Fatalf("%s after forget → %q", q, got)
		}
	}
	if ts, _ := k.List(context.Background(), "feishu:ou_a", "", 0); len(ts) != 0 {
		t.Fatalf("list after forget = %d turns", len(ts))
	}
	if got := hits(t, k, "feishu:ou_b", "考试", 1); len(got) != 1 {
		t.Fatal("another principal's history went too")
	}
}

func TestRetentionPrunes(t *testing.T) {
	k, c, _ := newTestKeeper(t)
	k.SetBounds(48*time.Hour, 3)
	record(t, k, c, "console:a", "console:a", false, "old exam", "ok")
	c.Advance(47 * time.Hour)
	record(t, k, c, "console:b", "console:b", false, "newer exam", "ok")
	c.Advance(2 * time.Hour)
	// Past retention: hidden at once, deleted by the pruner's next wake.
	if got := hits(t, k, "console:a", "exam", 1); len(got) != 0 {
		t.Fatalf("expired turn found: %q", got)
	}
	wait := k.pruneOnce(context.Background())
	if want := 46 * time.Hour; wait != want {
		t.Fatalf("pruner sleeps %v, want %v (until the next turn expires)", wait, want)
	}
	if ts, _ := k.st.List(context.Background(), "console:a", store.HistoryQuery{}); len(ts) != 0 {
		t.Fatalf("pruned log still holds %d turns", len(ts))
	}
	// max_turns: the newest 3 stay.
	for _, w := range []string{"one", "two", "three", "four"} {
		record(t, k, c, "console:b", "console:b", false, w, "ok")
	}
	if ts, _ := k.st.List(context.Background(), "console:b", store.HistoryQuery{}); len(ts) != 3 || ts[2].Text != "two" {
		t.Fatalf("kept %d turns", len(ts))
	}
}

func TestRestartKeepsHistory(t *testing.T) {
	k, c, s := newTestKeeper(t)
	record(t, k, c, "telegram:1", "telegram:chat:1", false, "watch the 期末考试 page", "ok")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openBolt(t, s.Path(), c)
	k2, _ := New(Options{Store: s2.History(), Now: c.Now})
	if got := hits(t, k2, "telegram:1", "考试", 1); len(got) != 1 {
		t.Fatalf("after restart → %q", got)
	}
}

// TestRedactEndsAURLAtFullWidthPunctuation: CJK and full-width
// punctuation right after a link ends the link; the text after it stays.
func TestRedactEndsAURLAtFullWidthPunctuation(t *testing.T) {
	for in, want := range map[string]string{
		"\u89C1 https://a.example/x?token=abc\uFF08\u622A\u6B62\u5468\u4E94\uFF09": "\u89C1 https://a.example/x?[redacted]\uFF08\u622A\u6B62\u5468\u4E94\uFF09",
		"https://a.example/x?k=v\uFF0C\u8C22\u8C22\u3002":                          "https://a.example/x?[redacted]\uFF0C\u8C22\u8C22\u3002",
		"\u300Chttps://a.example/p\u300D":                                          "\u300Chttps://a.example/p\u300D",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
