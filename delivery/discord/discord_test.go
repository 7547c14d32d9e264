package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/herald-bridge/herald/delivery/discord"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/store"
)

const (
	webhookID = "1180000000000000001"
	token     = "Zq8vLm3Nx7Rk2Tp9Wy4Bc6Df1Gh5Jk0Ls8Mn3Pq7Rt2Vw6Xy"
	hookPath  = "/api/webhooks/" + webhookID + "/" + token
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// answer is how the fake webhook answers one accepted request: its
// default (200 with the message, or 204 without wait=true), a status with
// a JSON error {"message","code"} and headers, or Drop to read the
// request and close the connection without answering.
type answer struct {
	Status  int
	Body    string
	Headers map[string]string
	Drop    bool
}

type posted struct {
	Content  string
	Mentions any // allowed_mentions as sent
	Wait     string
}

// fakeDiscord is a Discord webhook on 127.0.0.1 speaking Discord's wire
// format: a JSON body needing content (at most 2000 characters), the
// message object back with wait=true, and Discord's JSON errors: an
// unknown webhook 404 code 10015, a wrong token 401 code 50027.
type fakeDiscord struct {
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	got    []posted
	answer func(n int, p posted) answer
}

func newFake(t testing.TB, answer func(n int, p posted) answer) *fakeDiscord {
	t.Helper()
	f := &fakeDiscord{t: t, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func jsonError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"message": %q, "code": %d}`, msg, code)
}

func (f *fakeDiscord) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	id, tok, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/webhooks/"), "/")
	switch {
	case !ok || id != webhookID:
		jsonError(w, http.StatusNotFound, 10015, "Unknown Webhook")
		return
	case tok != token:
		jsonError(w, http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		return
	}
	var body struct {
		Content         string `json:"content"`
		AllowedMentions any    `json:"allowed_mentions"`
	}
	if r.Method != http.MethodPost || json.Unmarshal(raw, &body) != nil {
		jsonError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	if body.Content == "" {
		jsonError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return
	}
	if render.Length(body.Content) > 2000 {
		jsonError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	p := posted{Content: body.Content, Mentions: body.AllowedMentions, Wait: r.URL.Query().Get("wait")}
	f.mu.Lock()
	n := len(f.got)
	f.got = append(f.got, p)
	ans := f.answer
	f.mu.Unlock()
	var a answer
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
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	switch {
	case a.Status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		_, _ = io.WriteString(w, a.Body)
	case p.Wait == "true":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprint(1190000000000000000 + n), "type": 0, "content": p.Content, "webhook_id": webhookID})
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fakeDiscord) posts() []posted {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]posted(nil), f.got...)
}

func hookOf(f *fakeDiscord) string { return f.URL + hookPath }

func newSink(t *testing.T, f *fakeDiscord, opts ...discord.Option) *discord.Sink {
	t.Helper()
	opts = append([]discord.Option{discord.WithEgress(egress.Options{AllowPrivate: true}), discord.WithClock(func() time.Time { return t0 })}, opts...)
	s, err := discord.New(hookOf(f), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: discord.Kind, Name: "discord-ops"} }

// hostile is an item title holding Chinese text, an ampersand, an HTML
// tag, a CQ code, a mention of everyone and Discord's own markdown.
const hostile = "期末考试 & <b>重要</b> [CQ:at,qq=all] @everyone **粗** [点我](https://evil.example) <@123>"

func news(title string) delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: title, URL: "https://jw.example.edu.cn/notice?id=1&lang=zh", Change: delivery.ChangeNew},
		{ID: "2", Title: "作业二截止时间调整", Change: delivery.ChangeChanged, Due: t0.Add(26 * time.Hour)},
	}}
}

func send(t *testing.T, s *discord.Sink, m delivery.Message) delivery.Outcome {
	t.Helper()
	return s.Send(context.Background(), delivery.Delivery{To: to(), Message: m, Lang: "zh", Zone: time.UTC})
}

// TestRender_HostileTitleIsTextWithItsLink: a title with Chinese text, &,
// <b>, a CQ code, @everyone and markdown arrives once, escaped inside the
// item's [title](url) link, with every mention suppressed; the message id
// Discord answers with (wait=true) is kept.
func TestRender_HostileTitleIsTextWithItsLink(t *testing.T) {
	f := newFake(t, nil)
	out := send(t, newSink(t, f), news(hostile))
	deliverytest.Outcome(t, out, delivery.Completed, "")
	if out.ProviderID != "1190000000000000000" {
		t.Errorf("provider id %q", out.ProviderID)
	}
	got := f.posts()
	if len(got) != 1 || got[0].Wait != "true" {
		t.Fatalf("webhook got %+v", got)
	}
	if m, _ := json.Marshal(got[0].Mentions); string(m) != `{"parse":[]}` {
		t.Errorf("allowed_mentions %s, want every mention suppressed", m)
	}
	c := got[0].Content
	wantLink := `[期末考试 & \<b\>重要\</b\> \[CQ:at,qq=all\] \@everyone \*\*粗\*\* \[点我\]\(https://evil.example\) \<\@123\>](https://jw.example.edu.cn/notice?id=1&lang=zh)`
	for _, want := range []string{"**课程通知 有 2 项更新**", `• \[新\] ` + wantLink, "作业二截止时间调整", "还剩 1 天 2 小时"} {
		if !strings.Contains(c, want) {
			t.Errorf("content lacks %q:\n%s", want, c)
		}
	}
	for _, bad := range []string{"<b>", " @everyone", "**粗**", "[点我]", "<@123>"} {
		if strings.Contains(c, bad) {
			t.Errorf("content carries %q unescaped:\n%s", bad, c)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"期末考试":                              "期末考试",
		"a_b *c* ~~d~~ `e` ||f||":           `a\_b \*c\* \~\~d\~\~ \` + "`" + `e\` + "`" + ` \|\|f\|\|`,
		"# 标题":                              `\# 标题`,
		"> quote":                           `\> quote`,
		"1. one":                            `1\. one`,
		"- item":                            `\- item`,
		"see https://x.example/a_b*c done_": `see https://x.example/a_b*c done\_`,
		`back\slash`:                        `back\\slash`,
	} {
		if got := discord.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSplit_WithinTwoThousandNeverBetweenABackslashAndItsCharacter: a
// long notice goes in parts of at most 2000 characters, none ending in a
// lone escaping backslash, losing nothing; the dispatcher sends every
// part once and the webhook takes each.
func TestSplit_WithinTwoThousandNeverBetweenABackslashAndItsCharacter(t *testing.T) {
	text := strings.Repeat("通知：明天 9 点 *图书馆* 三楼 [会议]。", 300) // one line, ~8,000 characters escaped
	msg := delivery.Message{Kind: delivery.KindInbound, Title: "会议通知", Text: text, OccurredAt: t0}
	f := newFake(t, nil)
	sink := newSink(t, f)
	parts := sink.Parts(delivery.Delivery{Message: msg, Lang: "zh"})
	if len(parts) < 4 {
		t.Fatalf("%d parts", len(parts))
	}
	joined := ""
	for i, p := range parts {
		if render.Length(p) > discord.MaxContent || !utf8.ValidString(p) {
			t.Errorf("part %d: %d characters, valid UTF-8 %v", i, render.Length(p), utf8.ValidString(p))
		}
		if trail := len(p) - len(strings.TrimRight(p, `\`)); trail%2 == 1 {
			t.Errorf("part %d ends in a lone backslash", i)
		}
		joined += strings.TrimPrefix(p, "**会议通知**\n\n")
	}
	if joined != discord.Escape(text) {
		t.Errorf("the parts do not add up to the text")
	}

	r := robottest.NewRig(t, t0)
	r.Start("discord-ops", discord.Kind, sink, nil)
	fx := r.Settled(r.Queue(msg), store.Completed)
	if got := f.posts(); len(got) != len(parts) || fx.PartsSent != len(parts) {
		t.Fatalf("webhook got %d messages, ledger %d parts, want %d", len(got), fx.PartsSent, len(parts))
	}
}

// TestI3_RateLimitedWaitsRetryAfterThenDeliversOnce: a 429 sent nothing;
// the push waits Discord's retry_after (rounded up) and arrives once.
func TestI3_RateLimitedWaitsRetryAfterThenDeliversOnce(t *testing.T) {
	f := newFake(t, func(n int, _ posted) answer {
		if n == 0 {
			return answer{Status: http.StatusTooManyRequests, Body: `{"message": "You are being rate limited.", "retry_after": 6.457, "global": false}`,
				Headers: map[string]string{"Retry-After": "7", "X-RateLimit-Scope": "user"}}
		}
		return answer{}
	})
	r := robottest.NewRig(t, t0)
	r.Start("discord-ops", discord.Kind, newSink(t, f, discord.WithClock(r.Clock.Now)), nil)
	k := r.Queue(news("作业"))
	fx := r.Settled(k, store.Pending)
	if fx.Error != "rate_limited" || !fx.NotBefore.Equal(t0.Add(7*time.Second)) {
		t.Fatalf("after 429: error %q, next attempt %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(7 * time.Second)
	fx = r.Settled(k, store.Completed)
	if got := f.posts(); len(got) != 2 {
		t.Fatalf("webhook got %d requests, want the refused one and the delivered one", len(got))
	}
	if fx.ProviderID == "" {
		t.Error("the message id was not recorded")
	}
}

// TestRate_EmptyBucketWaitsWithoutARequest: when Discord says the
// webhook's bucket is empty (X-RateLimit-Remaining 0), the next send
// waits X-RateLimit-Reset-After without asking, then goes.
func TestRate_EmptyBucketWaitsWithoutARequest(t *testing.T) {
	f := newFake(t, func(n int, _ posted) answer {
		return answer{Headers: map[string]string{"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "2.5", "X-RateLimit-Bucket": "abcd"}}
	})
	now := t0
	s := newSink(t, f, discord.WithClock(func() time.Time { return now }))
	deliverytest.Outcome(t, send(t, s, news("作业")), delivery.Completed, "")
	out := send(t, s, news("作业"))
	deliverytest.Outcome(t, out, delivery.RetryAfter, "paced")
	if out.After != 3*time.Second || len(f.posts()) != 1 {
		t.Fatalf("after %v, webhook got %d", out.After, len(f.posts()))
	}
	now = now.Add(2500 * time.Millisecond)
	deliverytest.Outcome(t, send(t, s, news("作业")), delivery.Completed, "")
}

// TestI3_DroppedConnectionIsUnknownAndNeverSentAgain: the webhook read the
// message and the connection dropped: unknown, no second message.
func TestI3_DroppedConnectionIsUnknownAndNeverSentAgain(t *testing.T) {
	f := newFake(t, func(int, posted) answer { return answer{Drop: true} })
	r := robottest.NewRig(t, t0)
	r.Start("discord-ops", discord.Kind, newSink(t, f, discord.WithClock(r.Clock.Now)), nil)
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

// TestI3_ServerErrorIsUnknownAndNeverSentAgain: a 502 may have posted the
// message: unknown, not sent again.
func TestI3_ServerErrorIsUnknownAndNeverSentAgain(t *testing.T) {
	f := newFake(t, func(int, posted) answer {
		return answer{Status: http.StatusBadGateway, Body: "<html>bad gateway</html>"}
	})
	r := robottest.NewRig(t, t0)
	r.Start("discord-ops", discord.Kind, newSink(t, f, discord.WithClock(r.Clock.Now)), nil)
	k := r.Queue(news("作业"))
	if fx := r.Settled(k, store.Unknown); fx.Error != "http_502" {
		t.Errorf("error %q, want http_502", fx.Error)
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
}

// TestWrongTokenFailsAfterOneAttemptAndMarksUnreachable: a wrong token
// (401, code 50027) ends the push failed at once and tells the owner the
// recipient is unreachable; so does a deleted webhook (404, 10015).
func TestWrongTokenFailsAfterOneAttemptAndMarksUnreachable(t *testing.T) {
	for _, tc := range []struct{ path, reason string }{
		{"/api/webhooks/" + webhookID + "/wrong" + token, "invalid_webhook_token"},
		{"/api/webhooks/1180000000000000099/" + token, "unknown_webhook"},
	} {
		f := newFake(t, nil)
		s, err := discord.New(f.URL+tc.path, discord.WithEgress(egress.Options{AllowPrivate: true}))
		if err != nil {
			t.Fatal(err)
		}
		r := robottest.NewRig(t, t0)
		var mu sync.Mutex
		var marked []string
		r.Start("discord-ops", discord.Kind, s, func(o *delivery.Options) {
			o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
				mu.Lock()
				marked = append(marked, recipient+" "+reason)
				mu.Unlock()
			}
		})
		fx := r.Settled(r.Queue(news("作业")), store.Failed)
		if fx.Error != tc.reason || len(fx.Attempts) != 1 {
			t.Fatalf("error %q after %d attempts, want %s", fx.Error, len(fx.Attempts), tc.reason)
		}
		robottest.Wait(t, "the unreachable mark", func() bool { mu.Lock(); defer mu.Unlock(); return len(marked) > 0 })
		mu.Lock()
		if len(marked) != 1 || marked[0] != "discord-ops "+tc.reason {
			t.Errorf("unreachable marks %v", marked)
		}
		mu.Unlock()
	}
}

// TestClassify: each of Discord's answers ends in its class, through a
// real webhook answering it.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status      int
		body        string
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{204, "", delivery.Completed, "", false},
		{200, `{"id":"1190000000000000042"}`, delivery.Completed, "", false},
		{400, `{"message":"Invalid Form Body","code":50035}`, delivery.Failed, "invalid_form_body", false},
		{400, `{"message":"Cannot send an empty message","code":50006}`, delivery.Failed, "empty_message", false},
		{400, `{"message":"Webhooks posted to forum channels must have a thread_name or thread_id","code":220001}`, delivery.Failed, "thread_required", false},
		{413, `{"message":"Request entity too large","code":40005}`, delivery.Failed, "entity_too_large", false},
		{401, `{"message":"Invalid Webhook Token","code":50027}`, delivery.Failed, "invalid_webhook_token", true},
		{403, `{"message":"Missing Permissions","code":50013}`, delivery.Failed, "code_50013", true},
		{404, `{"message":"Unknown Webhook","code":10015}`, delivery.Failed, "unknown_webhook", true},
		{404, `not json`, delivery.Failed, "http_404", true},
		{429, `{"message":"You are being rate limited.","retry_after":0.3,"global":true}`, delivery.RetryAfter, "rate_limited", false},
		{500, `{"message":"500: Internal Server Error","code":0}`, delivery.Unknown, "http_500", false},
		{503, ``, delivery.Unknown, "http_503", false},
	} {
		f := newFake(t, func(int, posted) answer { return answer{Status: tc.status, Body: tc.body} })
		out := send(t, newSink(t, f), news("作业"))
		if out.Result != tc.result || out.Reason != tc.reason || out.Unreachable != tc.unreachable {
			t.Errorf("%d %s: %v %q unreachable %v, want %v %q %v", tc.status, tc.body, out.Result, out.Reason, out.Unreachable, tc.result, tc.reason, tc.unreachable)
		}
		if tc.status == 200 && out.ProviderID != "1190000000000000042" {
			t.Errorf("provider id %q", out.ProviderID)
		}
		if tc.status == 429 && out.After != time.Second {
			t.Errorf("429 retry_after 0.3: after %v, want 1s", out.After)
		}
	}
}

// TestRate_ConfiguredPaceSharedAcrossReplicas: two sinks on one store (two
// replicas) share the webhook's bucket: of 10 sends at one instant only
// the default burst of 5 goes out; the rest wait, nothing sent.
func TestRate_ConfiguredPaceSharedAcrossReplicas(t *testing.T) {
	f := newFake(t, nil)
	st := robottest.NewRig(t, t0).Store
	a := newSink(t, f, discord.WithBuckets(st.Buckets()))
	b := newSink(t, f, discord.WithBuckets(st.Buckets()), discord.WithPace(0, 0))
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
		case out.Result == delivery.RetryAfter && out.Reason == "paced" && out.After >= discord.DefaultEvery:
			paced++
		default:
			t.Fatalf("send %d: %+v", i, out)
		}
	}
	if sent != discord.DefaultBurst || paced != 10-discord.DefaultBurst || len(f.posts()) != discord.DefaultBurst {
		t.Fatalf("sent %d, paced %d, webhook got %d; want %d sent", sent, paced, len(f.posts()), discord.DefaultBurst)
	}
}

// TestI10_TokenNeverInLogsErrorsLedgerOrMetrics: a dropped connection and
// a wrong token are logged, recorded and counted without the token; a
// constructor error neither.
func TestI10_TokenNeverInLogsErrorsLedgerOrMetrics(t *testing.T) {
	f := newFake(t, func(n int, _ posted) answer {
		return answer{Drop: n == 0, Status: http.StatusNotFound, Body: `{"message":"Unknown Webhook","code":10015}`}
	})
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("discord-ops", discord.Kind, newSink(t, f, discord.WithLogger(log)), func(o *delivery.Options) {
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
	if !strings.Contains(metrics.String(), `kind="discord",result="unknown"`) {
		t.Errorf("metrics lack the webhook's attempts:\n%s", metrics.String())
	}
	for _, k := range []string{lost, refused} {
		if fx := r.Effect(k); strings.Contains(fx.Error, token) {
			t.Errorf("ledger error %q carries the token", fx.Error)
		}
	}
	_, err = delivery.BuildSink(&discord.Config{URL: "ftp://discord.example" + hookPath}, delivery.SinkDeps{Name: "discord-ops"})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("constructor error %v", err)
	}
	if red := delivery.Redact("posting to https://discord.com"+hookPath+"?wait=true failed; token "+token, (&discord.Config{URL: "https://discord.com" + hookPath}).Secrets()); strings.Contains(red, token) {
		t.Errorf("redacted: %q", red)
	}
}

// TestCheckConfig_DiscordShapeWithLineNumbers: every problem of a discord
// section is reported at its line, none quoting the token.
func TestCheckConfig_DiscordShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-url.discord: url is required`,
		`testdata/bad.yaml:5: recipients.no-path.discord.url: must be the webhook's whole URL`,
		`testdata/bad.yaml:7: recipients.plain-http.discord.url: must use https`,
		`testdata/bad.yaml:9: recipients.bad-pace.discord.every: must be a duration of at most 1h0m0s`,
		`testdata/bad.yaml:9: recipients.bad-pace.discord.burst: must be between 1 and 100`,
		`testdata/bad.yaml:11: unknown key "token" in recipients.unknown-key.discord`,
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
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return token, k == "DISCORD_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.Recipients["discord-ops"].Sink(); sc == nil || sc.Kind() != discord.Kind {
		t.Fatalf("discord-ops has sink %v", sc)
	}
}
