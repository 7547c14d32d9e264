package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/delivery/slack"
	"github.com/herald-bridge/herald/store"
)

// hookPath is the path of a webhook URL; its last segment is the token.
const (
	token    = "q7Xk2LmN9pR4sT8vW1yZ3bC5"
	hookPath = "/services/T0HERALD1/B0HERALD2/" + token
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// answer is how the fake webhook answers one request: a status with a
// plain-text body (Slack's wire format), or Drop to read the request and
// close the connection without answering.
type answer struct {
	Status     int
	Body       string
	RetryAfter string
	Drop       bool
}

type posted struct {
	Text string
	At   time.Time
}

// fakeSlack is an incoming webhook on 127.0.0.1 speaking Slack's answers:
// 200 "ok", or an error string with its status. A request to another
// path is answered 404 no_service, as Slack answers an unknown webhook.
type fakeSlack struct {
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	got    []posted
	answer func(n int, p posted) answer
}

func newFake(t testing.TB, answer func(n int, p posted) answer) *fakeSlack {
	t.Helper()
	f := &fakeSlack{t: t, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	if r.URL.Path != hookPath {
		http.Error(w, "no_service", http.StatusNotFound)
		return
	}
	var body struct {
		Text *string `json:"text"`
	}
	if r.Method != http.MethodPost || json.Unmarshal(raw, &body) != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	if body.Text == nil || *body.Text == "" {
		http.Error(w, "no_text", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	n := len(f.got)
	p := posted{Text: *body.Text, At: time.Now()}
	f.got = append(f.got, p)
	ans := f.answer
	f.mu.Unlock()
	a := answer{Status: http.StatusOK, Body: "ok"}
	if ans != nil {
		a = ans(n, p)
	}
	if a.Drop {
		hj, _ := w.(http.Hijacker)
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	if a.RetryAfter != "" {
		w.Header().Set("Retry-After", a.RetryAfter)
	}
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

func (f *fakeSlack) posts() []posted {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]posted(nil), f.got...)
}

func hookOf(f *fakeSlack) string { return f.URL + hookPath }

func newSink(t *testing.T, f *fakeSlack, opts ...slack.Option) *slack.Sink {
	t.Helper()
	opts = append([]slack.Option{slack.WithEgress(egress.Options{AllowPrivate: true}), slack.WithClock(func() time.Time { return t0 })}, opts...)
	s, err := slack.New(hookOf(f), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: slack.Kind, Name: "slack-ops"} }

// hostile is an item title holding Chinese text, an ampersand, an HTML
// tag, a CQ code and Slack's own mention and link syntax.
const hostile = "期末考试 & <b>重要</b> [CQ:at,qq=all] <!channel> <https://evil.example|点我>"

func news(title string) delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: title, URL: "https://jw.example.edu.cn/notice?id=1&lang=zh", Change: delivery.ChangeNew},
		{ID: "2", Title: "作业二截止时间调整", Change: delivery.ChangeChanged, Due: t0.Add(26 * time.Hour)},
	}}
}

func send(t *testing.T, s *slack.Sink, m delivery.Message) delivery.Outcome {
	t.Helper()
	return s.Send(context.Background(), delivery.Delivery{To: to(), Message: m, Lang: "zh", Zone: time.UTC})
}

// TestRender_HostileTitleIsTextWithItsLink: a title with Chinese text, &,
// <b>, a CQ code and <!channel> arrives once as escaped text inside the
// item's <url|title> link: no markup, no mention, no second link, every
// Chinese character intact.
func TestRender_HostileTitleIsTextWithItsLink(t *testing.T) {
	f := newFake(t, nil)
	deliverytest.Outcome(t, send(t, newSink(t, f), news(hostile)), delivery.Completed, "")
	got := f.posts()
	if len(got) != 1 {
		t.Fatalf("webhook got %d messages", len(got))
	}
	text := got[0].Text
	wantLink := "<https://jw.example.edu.cn/notice?id=1&amp;lang=zh|期末考试 &amp; &lt;b&gt;重要&lt;/b&gt; [CQ:at,qq=all] &lt;!channel&gt; &lt;https://evil.example|点我&gt;>"
	for _, want := range []string{"*课程通知 有 2 项更新*", "• [新] " + wantLink, "作业二截止时间调整", "还剩 1 天 2 小时"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// Every < left is the one opening the item's link.
	if n := strings.Count(text, "<"); n != 1 {
		t.Errorf("text holds %d '<', want only the link's:\n%s", n, text)
	}
	for _, bad := range []string{"<b>", "<!channel>", "<https://evil"} {
		if strings.Contains(text, bad) {
			t.Errorf("text carries %q as markup:\n%s", bad, text)
		}
	}
}

// TestRender_HeadlineAndTextEscaped: the headline (a deadline's item
// title) and free text are escaped too, and a URL Slack cannot link is
// shown as escaped text.
func TestRender_HeadlineAndTextEscaped(t *testing.T) {
	m := delivery.Message{Kind: delivery.KindDeadline, OccurredAt: t0, Text: "a <!here> & b", Items: []delivery.Item{
		{ID: "1", Title: "<i>报告</i>", URL: "https://x.example/a", Change: delivery.ChangeDeadline, Due: t0.Add(3 * time.Hour)},
		{ID: "2", Title: "附件", URL: "ftp://files.example/x?a=<b>", Change: delivery.ChangeNew},
	}}
	parts := slack.Render(m, "en", time.UTC, t0)
	if len(parts) != 1 {
		t.Fatalf("%d parts", len(parts))
	}
	for _, want := range []string{"*Due in 3 h: &lt;i&gt;报告&lt;/i&gt;*", "a &lt;!here&gt; &amp; b", "<https://x.example/a|&lt;i&gt;报告&lt;/i&gt;>", "附件", "ftp://files.example/x?a=&lt;b&gt;"} {
		if !strings.Contains(parts[0], want) {
			t.Errorf("text lacks %q:\n%s", want, parts[0])
		}
	}
}

// TestSplit_LongTextWithinLimitNeverInsideAnEntity: a long notice goes in
// parts of at most MaxText characters, none cut inside an entity, losing
// nothing; the dispatcher sends every part once.
func TestSplit_LongTextWithinLimitNeverInsideAnEntity(t *testing.T) {
	text := strings.Repeat("通知：明天 9 点 & 图书馆 <三楼> 开会。", 2500) // one line, ~70,000 characters escaped
	msg := delivery.Message{Kind: delivery.KindInbound, Title: "会议通知", Text: text, OccurredAt: t0}
	f := newFake(t, nil)
	sink := newSink(t, f)
	parts := sink.Parts(delivery.Delivery{Message: msg, Lang: "zh"})
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	joined := ""
	for i, p := range parts {
		if render.Length(p) > slack.MaxText || !utf8.ValidString(p) {
			t.Errorf("part %d: %d characters, valid UTF-8 %v", i, render.Length(p), utf8.ValidString(p))
		}
		if k := strings.LastIndexByte(p, '&'); k >= 0 && !strings.Contains(p[k:], ";") {
			t.Errorf("part %d ends inside an entity: %q", i, p[max(k-10, 0):])
		}
		joined += strings.TrimPrefix(p, "*会议通知*\n\n")
	}
	if joined != slack.Escape(text) {
		t.Errorf("the parts do not add up to the text")
	}

	r := robottest.NewRig(t, t0)
	r.Start("slack-ops", slack.Kind, sink, nil)
	fx := r.Settled(r.Queue(msg), store.Completed)
	if got := f.posts(); len(got) != len(parts) || fx.PartsSent != len(parts) {
		t.Fatalf("webhook got %d messages, ledger %d parts, want %d", len(got), fx.PartsSent, len(parts))
	}
}

// TestI3_RateLimitedWaitsRetryAfterThenDeliversOnce: a 429 with
// Retry-After sent nothing; the push waits that long and arrives once.
func TestI3_RateLimitedWaitsRetryAfterThenDeliversOnce(t *testing.T) {
	f := newFake(t, func(n int, _ posted) answer {
		if n == 0 {
			return answer{Status: http.StatusTooManyRequests, Body: "rate_limited", RetryAfter: "7"}
		}
		return answer{Status: http.StatusOK, Body: "ok"}
	})
	r := robottest.NewRig(t, t0)
	r.Start("slack-ops", slack.Kind, newSink(t, f, slack.WithClock(r.Clock.Now)), nil)
	k := r.Queue(news("作业"))
	fx := r.Settled(k, store.Pending)
	if fx.Error != "rate_limited" || !fx.NotBefore.Equal(t0.Add(7*time.Second)) {
		t.Fatalf("after 429: error %q, next attempt %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(7 * time.Second)
	r.Settled(k, store.Completed)
	if got := f.posts(); len(got) != 2 {
		t.Fatalf("webhook got %d requests, want the refused one and the delivered one", len(got))
	}
}

// TestI3_DroppedConnectionIsUnknownAndNeverSentAgain: the webhook read the
// message and the connection dropped: unknown, no second message.
func TestI3_DroppedConnectionIsUnknownAndNeverSentAgain(t *testing.T) {
	f := newFake(t, func(int, posted) answer { return answer{Drop: true} })
	r := robottest.NewRig(t, t0)
	r.Start("slack-ops", slack.Kind, newSink(t, f, slack.WithClock(r.Clock.Now)), nil)
	k := r.Queue(news("作业"))
	if fx := r.Settled(k, store.Unknown); fx.Error != delivery.ReasonConnLost {
		t.Errorf("error %q, want %s", fx.Error, delivery.ReasonConnLost)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond) // polls of the dispatcher, which must find nothing to send
	if got := f.posts(); len(got) != 1 {
		t.Fatalf("webhook got %d messages, want 1", len(got))
	}
}

// TestI3_ServerErrorIsUnknownAndNeverSentAgain: Slack's 500 rollup_error
// may have posted the message: unknown, not sent again.
func TestI3_ServerErrorIsUnknownAndNeverSentAgain(t *testing.T) {
	f := newFake(t, func(int, posted) answer { return answer{Status: http.StatusInternalServerError, Body: "rollup_error"} })
	r := robottest.NewRig(t, t0)
	r.Start("slack-ops", slack.Kind, newSink(t, f, slack.WithClock(r.Clock.Now)), nil)
	k := r.Queue(news("作业"))
	if fx := r.Settled(k, store.Unknown); fx.Error != "rollup_error" {
		t.Errorf("error %q, want rollup_error", fx.Error)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond)
	if got := f.posts(); len(got) != 1 {
		t.Fatalf("webhook got %d messages, want 1", len(got))
	}
}

// TestI3_ConnectionRefusedIsRetriedNotSent: nothing listens: provably not
// sent, retry_after.
func TestI3_ConnectionRefusedIsRetriedNotSent(t *testing.T) {
	f := newFake(t, nil)
	s := newSink(t, f)
	f.Close()
	out := send(t, s, news("作业"))
	deliverytest.Outcome(t, out, delivery.RetryAfter, delivery.ReasonConnectFailed)
	if out.After < delivery.NotSentWait {
		t.Errorf("after %v", out.After)
	}
}

// TestDeadWebhookFailsAfterOneAttemptAndMarksUnreachable: a removed
// webhook (404 no_service) ends the push failed at once and tells the
// owner the recipient is unreachable.
func TestDeadWebhookFailsAfterOneAttemptAndMarksUnreachable(t *testing.T) {
	f := newFake(t, func(int, posted) answer { return answer{Status: http.StatusNotFound, Body: "no_service"} })
	r := robottest.NewRig(t, t0)
	var mu sync.Mutex
	var marked []string
	r.Start("slack-ops", slack.Kind, newSink(t, f), func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			marked = append(marked, recipient+" "+reason)
			mu.Unlock()
		}
	})
	fx := r.Settled(r.Queue(news("作业")), store.Failed)
	if fx.Error != "no_service" || len(fx.Attempts) != 1 || len(f.posts()) != 1 {
		t.Fatalf("error %q after %d attempts, %d requests", fx.Error, len(fx.Attempts), len(f.posts()))
	}
	robottest.Wait(t, "the unreachable mark", func() bool { mu.Lock(); defer mu.Unlock(); return len(marked) > 0 })
	mu.Lock()
	defer mu.Unlock()
	if len(marked) != 1 || marked[0] != "slack-ops no_service" {
		t.Errorf("unreachable marks %v", marked)
	}
}

// TestClassify: each of Slack's answers ends in its class, through a real
// webhook answering it.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status      int
		body        string
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{200, "ok", delivery.Completed, "", false},
		{200, "no_text", delivery.Failed, "no_text", false},
		{200, "<html>maintenance</html>", delivery.Unknown, "bad_response", false},
		{400, "invalid_payload", delivery.Failed, "invalid_payload", false},
		{400, "user_not_found", delivery.Failed, "user_not_found", true},
		{403, "action_prohibited", delivery.Failed, "action_prohibited", true},
		{403, "invalid_token", delivery.Failed, "invalid_token", true},
		{404, "channel_not_found", delivery.Failed, "channel_not_found", true},
		{404, "no_service", delivery.Failed, "no_service", true},
		{410, "channel_is_archived", delivery.Failed, "channel_is_archived", true},
		{403, "something new", delivery.Failed, "http_403", true},
		{404, "", delivery.Failed, "http_404", true},
		{413, "too large", delivery.Failed, "http_413", false},
		{429, "rate_limited", delivery.RetryAfter, "rate_limited", false},
		{500, "rollup_error", delivery.Unknown, "rollup_error", false},
		{502, "bad gateway", delivery.Unknown, "http_502", false},
		{503, "", delivery.Unknown, "http_503", false},
	} {
		f := newFake(t, func(int, posted) answer { return answer{Status: tc.status, Body: tc.body} })
		out := send(t, newSink(t, f), news("作业"))
		if out.Result != tc.result || out.Reason != tc.reason || out.Unreachable != tc.unreachable {
			t.Errorf("%d %q: %v %q unreachable %v, want %v %q %v", tc.status, tc.body, out.Result, out.Reason, out.Unreachable, tc.result, tc.reason, tc.unreachable)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"30", 30 * time.Second},
		{"1.2", 2 * time.Second},
		{"0", time.Second},
		{t0.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"", slack.DefaultRetryAfter},
		{"soon", slack.DefaultRetryAfter},
	} {
		if got := slack.RetryAfter(tc.v, t0); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestBlockedDestinationFailsUnsent: without policy.allow_private_networks
// the guard refuses the loopback webhook before anything is sent.
func TestBlockedDestinationFailsUnsent(t *testing.T) {
	f := newFake(t, nil)
	s, err := slack.New(hookOf(f))
	if err != nil {
		t.Fatal(err)
	}
	deliverytest.Outcome(t, send(t, s, news("作业")), delivery.Failed, "blocked_destination")
	if len(f.posts()) != 0 {
		t.Fatal("a blocked destination was reached")
	}
}

// TestRate_OneMessageASecondPerWebhook: by default a second message to
// the same webhook waits a second after the first.
func TestRate_OneMessageASecondPerWebhook(t *testing.T) {
	f := newFake(t, nil)
	st := robottest.NewRig(t, t0).Store
	s := newSink(t, f, slack.WithBuckets(st.Buckets()), slack.WithClock(time.Now))
	for i := range 2 {
		deliverytest.Outcome(t, send(t, s, news("作业")), delivery.Completed, "")
		_ = i
	}
	got := f.posts()
	if len(got) != 2 {
		t.Fatalf("webhook got %d", len(got))
	}
	if gap := got[1].At.Sub(got[0].At); gap < 900*time.Millisecond {
		t.Errorf("second message %v after the first, want about a second", gap)
	}
}

// TestRate_ConfiguredPaceSharedAcrossReplicas: two sinks on one store (two
// replicas) share the webhook's bucket as configured: of 10 sends at one
// instant only the burst goes out; the rest wait, nothing sent.
func TestRate_ConfiguredPaceSharedAcrossReplicas(t *testing.T) {
	f := newFake(t, nil)
	st := robottest.NewRig(t, t0).Store
	pace := slack.WithPace(30*time.Second, 3)
	a := newSink(t, f, slack.WithBuckets(st.Buckets()), pace)
	b := newSink(t, f, slack.WithBuckets(st.Buckets()), pace)
	sent, paced := 0, 0
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		out := send(t, s, news("作业"))
		switch {
		case out.Result == delivery.Completed:
			sent++
		case out.Result == delivery.RetryAfter && out.Reason == "paced" && out.After >= 30*time.Second:
			paced++
		default:
			t.Fatalf("send %d: %+v", i, out)
		}
	}
	if sent != 3 || paced != 7 || len(f.posts()) != 3 {
		t.Fatalf("sent %d, paced %d, webhook got %d; want 3 sent", sent, paced, len(f.posts()))
	}
}

// TestI10_WebhookURLNeverInLogsErrorsLedgerOrMetrics: a dropped
// connection and a dead webhook are logged, recorded and counted without
// the URL or its token; a constructor error neither.
func TestI10_WebhookURLNeverInLogsErrorsLedgerOrMetrics(t *testing.T) {
	f := newFake(t, func(n int, _ posted) answer {
		return answer{Drop: n == 0, Status: http.StatusNotFound, Body: "no_service"}
	})
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("slack-ops", slack.Kind, newSink(t, f, slack.WithLogger(log)), func(o *delivery.Options) {
		o.Log, o.Metrics = log, delivery.NewMetrics(reg)
	})
	lost := r.Queue(news("作业"))
	r.Settled(lost, store.Unknown)
	refused := r.Queue(news("作业"))
	r.Settled(refused, store.Failed)

	var metrics bytes.Buffer
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&metrics, mf); err != nil {
			t.Fatal(err)
		}
	}
	secrets := []string{token, hookPath, hookOf(f)}
	if !strings.Contains(logs.String(), `"error"`) {
		t.Fatalf("the dropped connection was not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, secrets...)
	for _, s := range secrets {
		if strings.Contains(metrics.String(), s) {
			t.Errorf("metrics carry %q", s)
		}
	}
	if !strings.Contains(metrics.String(), `kind="slack",result="unknown"`) {
		t.Errorf("metrics lack the webhook's attempts:\n%s", metrics.String())
	}
	for _, k := range []string{lost, refused} {
		if fx := r.Effect(k); strings.Contains(fx.Error, token) {
			t.Errorf("ledger error %q carries the token", fx.Error)
		}
	}
	_, err = delivery.BuildSink(&slack.Config{URL: "ftp://hooks.slack.example" + hookPath}, delivery.SinkDeps{Name: "slack-ops"})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("constructor error %v", err)
	}
	if red := delivery.Redact("posting to https://hooks.slack.com"+hookPath+" failed; token "+token, (&slack.Config{URL: "https://hooks.slack.com" + hookPath}).Secrets()); strings.Contains(red, token) || strings.Contains(red, "B0HERALD2") {
		t.Errorf("redacted: %q", red)
	}
}

// TestCheckConfig_SlackShapeWithLineNumbers: every problem of a slack
// section is reported at its line, none quoting the URL.
func TestCheckConfig_SlackShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-url.slack: url is required`,
		`testdata/bad.yaml:5: recipients.no-path.slack.url: must be the webhook's whole URL`,
		`testdata/bad.yaml:7: recipients.plain-http.slack.url: must use https`,
		`testdata/bad.yaml:9: recipients.bad-pace.slack.every: must be a duration of at most 1h0m0s`,
		`testdata/bad.yaml:9: recipients.bad-pace.slack.burst: must be between 1 and 100`,
		`testdata/bad.yaml:11: unknown key "token" in recipients.unknown-key.slack`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d = %q, want %q…", i, lines[i], w)
		}
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("config errors carry the token:\n%v", err)
	}
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return token, k == "SLACK_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Recipients["slack-ops"].Sink()
	if sc == nil || sc.Kind() != slack.Kind {
		t.Fatalf("slack-ops has sink %v", sc)
	}
	if c := sc.(*slack.Config); c.Every.D() != 2*time.Second || c.Burst != 2 {
		t.Errorf("pace %v/%d", c.Every.D(), c.Burst)
	}
}
