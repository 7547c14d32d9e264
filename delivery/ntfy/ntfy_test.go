package ntfy_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
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
	"github.com/herald-bridge/herald/delivery/ntfy"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/store"
)

const (
	topic = "herald-course-7f3c9a2e51d4"
	token = "tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// fault is how the fake server answers one publish instead of
// publishing it.
type fault struct {
	Status int
	Code   int // ntfy's error code
	Header http.Header
	Raw    string // a body other than ntfy's error JSON
	Drop   bool   // read the request, close without an answer
	Delay  time.Duration
}

// server is a fake ntfy server: JSON publishing at its root, Bearer and
// Basic credentials, ntfy's error answers.
type server struct {
	*httptest.Server
	t     testing.TB
	auth  string // the Authorization header it accepts; "": anyone may publish
	fault func(n int) *fault
	mu    sync.Mutex
	got   []received
}

type received struct {
	Method, Path, Auth, ContentType string
	Raw                             []byte
	Msg                             ntfy.Publish
}

func newServer(t testing.TB, auth string, f func(n int) *fault) *server {
	t.Helper()
	s := &server{t: t, auth: auth, fault: f}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

var topicRE = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

func writeErr(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "http": status, "error": msg, "link": "https://ntfy.sh/docs/publish/"})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rc := received{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Raw: raw}
	if err := json.Unmarshal(raw, &rc.Msg); err != nil || r.URL.Path != "/" {
		writeErr(w, 400, 40017, "invalid request: body must be message JSON")
		return
	}
	s.mu.Lock()
	n := len(s.got)
	s.got = append(s.got, rc)
	s.mu.Unlock()
	if f := s.fault; f != nil {
		if a := f(n); a != nil {
			time.Sleep(a.Delay)
			switch {
			case a.Drop:
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					_ = conn.Close()
				}
			case a.Raw != "":
				for k, v := range a.Header {
					w.Header()[k] = v
				}
				w.WriteHeader(a.Status)
				_, _ = io.WriteString(w, a.Raw)
			default:
				for k, v := range a.Header {
					w.Header()[k] = v
				}
				writeErr(w, a.Status, a.Code, "refused")
			}
			return
		}
	}
	switch {
	case len(raw) > 2*4096:
		writeErr(w, 413, 41303, "request entity too large: JSON body too large")
	case s.auth != "" && rc.Auth != s.auth:
		writeErr(w, 401, 40101, "unauthorized")
	case !topicRE.MatchString(rc.Msg.Topic):
		writeErr(w, 400, 40009, "invalid request: topic invalid")
	case len(rc.Msg.Message) > 4096:
		writeErr(w, 400, 40014, "invalid request: message too large and attachments are not allowed")
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("msg%09d", n), "time": t0.Unix(), "expires": t0.Add(12 * time.Hour).Unix(), "event": "message",
			"topic": rc.Msg.Topic, "title": rc.Msg.Title, "message": rc.Msg.Message, "click": rc.Msg.Click,
		})
	}
}

func (s *server) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

func bearer(tok string) string { return "Bearer " + tok }

func newSink(t *testing.T, srv *server, tg ntfy.Target, opts ...ntfy.Option) *ntfy.Sink {
	t.Helper()
	if tg.URL == "" {
		tg.URL = srv.URL + "/" + topic
	}
	opts = append([]ntfy.Option{ntfy.WithEgress(egress.Options{AllowPrivate: true}), ntfy.WithClock(func() time.Time { return t0 })}, opts...)
	s, err := ntfy.New(tg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: ntfy.Kind, Name: "my-phone"} }

const (
	hostileTitle = "期末考试 & <b>补考</b> [CQ:at,qq=all] 安排"
	link         = "https://jw.example.edu.cn/notice/1?a=1&b=2"
)

func news() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: hostileTitle, URL: link, Change: delivery.ChangeNew},
	}}
}

func send(s *ntfy.Sink, m delivery.Message) delivery.Outcome {
	return s.Send(context.Background(), delivery.Delivery{Key: "fx_1", To: to(), Message: m, Lang: "zh", Zone: time.UTC})
}

// TestSend_HostileTitleArrivesAsPlainTextWithItsLink: a title with
// Chinese text, &, <b> and a CQ code arrives character for character as
// plain text (no markdown, nothing escaped into entities), the item's
// link is the click action, the token the Bearer credential.
func TestSend_HostileTitleArrivesAsPlainTextWithItsLink(t *testing.T) {
	srv := newServer(t, bearer(token), nil)
	out := send(newSink(t, srv, ntfy.Target{Token: token, Priority: 4, Tags: []string{"books"}}), news())
	deliverytest.Outcome(t, out, delivery.Completed, "")
	if out.ProviderID != "msg000000000" || out.Parts != 1 {
		t.Errorf("outcome %+v", out)
	}
	got := srv.requests()
	if len(got) != 1 {
		t.Fatalf("server got %d requests", len(got))
	}
	r := got[0]
	if r.Method != http.MethodPost || r.Path != "/" || !strings.HasPrefix(r.ContentType, "application/json") || r.Auth != bearer(token) {
		t.Errorf("request %s %s, content type %q, auth %q", r.Method, r.Path, r.ContentType, r.Auth)
	}
	m := r.Msg
	if m.Topic != topic || m.Click != link || m.Priority != 4 || len(m.Tags) != 1 || m.Tags[0] != "books" {
		t.Errorf("message %+v", m)
	}
	if !strings.Contains(m.Title, "课程通知") {
		t.Errorf("title %q", m.Title)
	}
	if !strings.Contains(m.Message, hostileTitle) || !strings.Contains(m.Message, link) {
		t.Errorf("message text lacks the title or the link:\n%s", m.Message)
	}
	for _, bad := range []string{"&amp;", "&lt;", `\u003c`, `\u0026`, "**"} {
		if bytes.Contains(r.Raw, []byte(bad)) {
			t.Errorf("body carries %q: %s", bad, r.Raw)
		}
	}
	if bytes.Contains(r.Raw, []byte(`"markdown"`)) {
		t.Errorf("published as markdown: %s", r.Raw)
	}
}

// TestSend_BasicCredentials: username and password go as Basic
// credentials.
func TestSend_BasicCredentials(t *testing.T) {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("phone:s3cret-pass"))
	srv := newServer(t, want, nil)
	deliverytest.Outcome(t, send(newSink(t, srv, ntfy.Target{Username: "phone", Password: "s3cret-pass"}), news()), delivery.Completed, "")
}

// TestSend_SelfHostedUnderAPath: a server behind a path publishes at
// that path.
func TestSend_SelfHostedUnderAPath(t *testing.T) {
	var path string
	inner := newServer(t, "", nil)
	proxy := httptest.NewServer(http.StripPrefix("/ntfy", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		inner.Config.Handler.ServeHTTP(w, r)
	})))
	t.Cleanup(proxy.Close)
	s := newSink(t, inner, ntfy.Target{URL: proxy.URL + "/ntfy/" + topic})
	deliverytest.Outcome(t, send(s, news()), delivery.Completed, "")
	if path != "/" || len(inner.requests()) != 1 {
		t.Errorf("published at %q", path)
	}
}

// TestLimits_LongTextCutToTheMessageLimitNeverTheLink: a long Chinese
// text is cut to 4096 bytes between characters, ending in "…", and the
// click link stays whole; a list of many linked items loses whole items,
// never part of a link.
func TestLimits_LongTextCutToTheMessageLimitNeverTheLink(t *testing.T) {
	srv := newServer(t, "", nil)
	s := newSink(t, srv, ntfy.Target{})
	long := strings.Repeat("通知：明天上午九点在图书馆三楼召开全体会议，请准时参加。", 200)
	m := delivery.Message{Kind: delivery.KindInbound, Title: hostileTitle, Text: long, OccurredAt: t0,
		Items: []delivery.Item{{ID: "1", Title: "会议", URL: link, Change: delivery.ChangeNew}}}
	deliverytest.Outcome(t, send(s, m), delivery.Completed, "")

	var items []delivery.Item
	var links []string
	for i := range 20 {
		u := fmt.Sprintf("https://jw.example.edu.cn/notice/%03d/%s", i, strings.Repeat("x", 300))
		links = append(links, u)
		items = append(items, delivery.Item{ID: fmt.Sprint(i), Title: strings.Repeat("课", 40), URL: u, Change: delivery.ChangeNew})
	}
	deliverytest.Outcome(t, send(s, delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: items}), delivery.Completed, "")

	got := srv.requests()
	if len(got) != 2 {
		t.Fatalf("server got %d requests", len(got))
	}
	for i, r := range got {
		msg := r.Msg.Message
		if len(msg) > ntfy.MaxMessage || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "…") || len(r.Raw) > ntfy.MaxBody {
			t.Errorf("message %d: %d bytes (body %d), valid %v, ends %q", i, len(msg), len(r.Raw), utf8.ValidString(msg), msg[max(len(msg)-8, 0):])
		}
	}
	if got[0].Msg.Click != link || !strings.Contains(got[0].Msg.Title, hostileTitle) {
		t.Errorf("first: click %q, title %q", got[0].Msg.Click, got[0].Msg.Title)
	}
	if got[1].Msg.Click != links[0] {
		t.Errorf("click %q, want the first item's link", got[1].Msg.Click)
	}
	for _, w := range regexp.MustCompile(`https://\S+`).FindAllString(got[1].Msg.Message, -1) {
		if !containsString(links, w) {
			t.Errorf("a link was cut: %q", w)
		}
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestI3_RateLimitedWaitsAndIsDeliveredOnce: a 429 sent nothing; the
// push waits and then arrives once.
func TestI3_RateLimitedWaitsAndIsDeliveredOnce(t *testing.T) {
	srv := newServer(t, "", func(n int) *fault {
		if n == 0 {
			return &fault{Status: 429, Code: 42901}
		}
		return nil
	})
	r := robottest.NewRig(t, t0)
	r.Start("my-phone", ntfy.Kind, newSink(t, srv, ntfy.Target{}, ntfy.WithClock(r.Clock.Now)), nil)
	k := r.Queue(news())
	fx := r.Settled(k, store.Pending)
	if fx.Error != "rate_limited" || !fx.NotBefore.Equal(t0.Add(ntfy.RateLimitedWait)) {
		t.Fatalf("after 429: error %q, next attempt %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(ntfy.RateLimitedWait)
	r.Settled(k, store.Completed)
	if got := srv.requests(); len(got) != 2 {
		t.Fatalf("server got %d requests, want the refused one and the delivered one", len(got))
	}
}

// TestI3_RetryAfterAndDailyQuota: a Retry-After is honoured; the daily
// quota waits QuotaWait.
func TestI3_RetryAfterAndDailyQuota(t *testing.T) {
	srv := newServer(t, "", func(n int) *fault {
		if n == 0 {
			return &fault{Status: 429, Code: 42901, Header: http.Header{"Retry-After": {"42"}}}
		}
		return &fault{Status: 429, Code: 42908}
	})
	s := newSink(t, srv, ntfy.Target{})
	out := send(s, news())
	deliverytest.Outcome(t, out, delivery.RetryAfter, "rate_limited")
	if out.After != 42*time.Second {
		t.Errorf("after %v, want 42s", out.After)
	}
	out = send(s, news())
	deliverytest.Outcome(t, out, delivery.RetryAfter, "daily_quota")
	if out.After != ntfy.QuotaWait {
		t.Errorf("after %v, want %v", out.After, ntfy.QuotaWait)
	}
}

// TestBadTokenFailsAfterOneAttemptAndMarksUnreachable: a wrong token
// (401) ends the push failed at once and tells the owner.
func TestBadTokenFailsAfterOneAttemptAndMarksUnreachable(t *testing.T) {
	srv := newServer(t, bearer(token), nil)
	r := robottest.NewRig(t, t0)
	var mu sync.Mutex
	var marked []string
	r.Start("my-phone", ntfy.Kind, newSink(t, srv, ntfy.Target{Token: "tk_wrongwrongwrongwrong"}), func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			marked = append(marked, recipient+" "+reason)
			mu.Unlock()
		}
	})
	fx := r.Settled(r.Queue(news()), store.Failed)
	if fx.Error != "unauthorized" || len(fx.Attempts) != 1 || len(srv.requests()) != 1 {
		t.Fatalf("error %q after %d attempts, %d requests", fx.Error, len(fx.Attempts), len(srv.requests()))
	}
	robottest.Wait(t, "the unreachable mark", func() bool { mu.Lock(); defer mu.Unlock(); return len(marked) > 0 })
	mu.Lock()
	defer mu.Unlock()
	if len(marked) != 1 || marked[0] != "my-phone unauthorized" {
		t.Errorf("unreachable marks %v", marked)
	}
}

// TestI3_TimeoutAfterSendingIsUnknownAndNeverSentAgain: the server took
// the message and did not answer in time: unknown (ntfy takes no key to
// drop a repeat by), and nothing is sent again.
func TestI3_TimeoutAfterSendingIsUnknownAndNeverSentAgain(t *testing.T) {
	srv := newServer(t, "", func(int) *fault { return &fault{Delay: 500 * time.Millisecond, Status: 200, Raw: "{}"} })
	r := robottest.NewRig(t, t0)
	s := newSink(t, srv, ntfy.Target{}, ntfy.WithEgress(egress.Options{AllowPrivate: true, Timeout: 100 * time.Millisecond}), ntfy.WithClock(r.Clock.Now))
	r.Start("my-phone", ntfy.Kind, s, nil)
	k := r.Queue(news())
	if fx := r.Settled(k, store.Unknown); fx.Error != delivery.ReasonTimeout {
		t.Errorf("error %q, want %s", fx.Error, delivery.ReasonTimeout)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond) // polls of the dispatcher, which must find nothing to send
	if got := srv.requests(); len(got) != 1 {
		t.Fatalf("server got %d messages, want 1", len(got))
	}
}

// TestI3_DroppedConnectionIsUnknown: the server read the message and
// the connection dropped: unknown.
func TestI3_DroppedConnectionIsUnknown(t *testing.T) {
	srv := newServer(t, "", func(int) *fault { return &fault{Drop: true} })
	deliverytest.Outcome(t, send(newSink(t, srv, ntfy.Target{}), news()), delivery.Unknown, delivery.ReasonConnLost)
}

// TestI3_RefusedConnectionIsRetriedNotUnknown: nothing left, so the push
// may go again.
func TestI3_RefusedConnectionIsRetriedNotUnknown(t *testing.T) {
	srv := newServer(t, "", nil)
	s := newSink(t, srv, ntfy.Target{})
	srv.Close()
	deliverytest.Outcome(t, send(s, news()), delivery.RetryAfter, delivery.ReasonConnectFailed)
}

// TestClassify_ErrorAnswers: each of ntfy's answers ends in its class.
func TestClassify_ErrorAnswers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		f           fault
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{"forbidden", fault{Status: 403, Code: 40301}, delivery.Failed, "forbidden", true},
		{"unauthorized", fault{Status: 401, Code: 40101}, delivery.Failed, "unauthorized", true},
		{"topic invalid", fault{Status: 400, Code: 40009}, delivery.Failed, "bad_topic", true},
		{"too large", fault{Status: 413, Code: 41303}, delivery.Failed, "code_41303", false},
		{"auth failures", fault{Status: 429, Code: 42909}, delivery.RetryAfter, "auth_failures", false},
		{"internal", fault{Status: 500, Code: 50001}, delivery.Unknown, "code_50001", false},
		{"proxy 502", fault{Status: 502, Raw: "<html>bad gateway</html>"}, delivery.Unknown, "http_502", false},
		{"200 not a message", fault{Status: 200, Raw: "<html>captive portal</html>"}, delivery.Unknown, "bad_response", false},
		{"redirect", fault{Status: 302, Raw: "moved", Header: http.Header{"Location": {"https://example.com/"}}}, delivery.Failed, "redirect", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			srv := newServer(t, "", func(int) *fault { return &f })
			out := send(newSink(t, srv, ntfy.Target{}), news())
			deliverytest.Outcome(t, out, tc.result, tc.reason)
			if out.Unreachable != tc.unreachable {
				t.Errorf("unreachable %v", out.Unreachable)
			}
		})
	}
}

// TestI10_TopicTokenAndPasswordNeverInLogsErrorsOrMetrics: a dropped
// connection and a refused token are logged, counted and recorded
// without the topic, the token or the password.
func TestI10_TopicTokenAndPasswordNeverInLogsErrorsOrMetrics(t *testing.T) {
	srv := newServer(t, bearer(token), func(n int) *fault {
		if n == 0 {
			return &fault{Drop: true}
		}
		return &fault{Status: 401, Code: 40101}
	})
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("my-phone", ntfy.Kind, newSink(t, srv, ntfy.Target{Token: token}, ntfy.WithLogger(log)), func(o *delivery.Options) {
		o.Log, o.Metrics = log, delivery.NewMetrics(reg)
	})
	lost := r.Queue(news())
	r.Settled(lost, store.Unknown)
	refused := r.Queue(news())
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
	secrets := []string{topic, token, srv.URL + "/" + topic}
	if !strings.Contains(logs.String(), `"error"`) {
		t.Fatalf("the dropped connection was not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, secrets...)
	for _, s := range secrets {
		if strings.Contains(metrics.String(), s) {
			t.Errorf("metrics carry %q", s)
		}
	}
	if !strings.Contains(metrics.String(), `kind="ntfy",result="unknown"`) {
		t.Errorf("metrics lack the sink's attempts:\n%s", metrics.String())
	}
	for _, k := range []string{lost, refused} {
		if fx := r.Effect(k); strings.Contains(fx.Error, topic) || strings.Contains(fx.Error, token) {
			t.Errorf("ledger error %q carries a secret", fx.Error)
		}
	}
	for _, c := range []*ntfy.Config{
		{URL: "ftp://ntfy.example/" + topic, Token: token},
		{URL: "https://10.0.0.1/" + topic, Password: "s3cret-pass", Username: "u"},
	} {
		_, err = delivery.BuildSink(c, delivery.SinkDeps{Name: "my-phone"})
		if err == nil || strings.Contains(err.Error(), topic) || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "s3cret-pass") {
			t.Errorf("constructor error %v", err)
		}
	}
}

// TestCheckConfig_NtfyShapeWithLineNumbers: every problem of an ntfy
// section is reported at its line, none quoting the topic or the token.
func TestCheckConfig_NtfyShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-url.ntfy: url is required`,
		`testdata/bad.yaml:5: recipients.no-topic.ntfy.url: must name the topic`,
		`testdata/bad.yaml:7: recipients.plain-http.ntfy.url: must use https`,
		`testdata/bad.yaml:9: recipients.both-credentials.ntfy.token: set either token or username and password`,
		`testdata/bad.yaml:11: recipients.lone-user.ntfy.username: username and password go together`,
		`testdata/bad.yaml:13: recipients.priority.ntfy.priority: must be 1 (min) to 5 (max)`,
		`testdata/bad.yaml:15: unknown key "secret" in recipients.unknown-key.ntfy`,
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
	for _, s := range []string{topic, token} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("config errors carry a secret:\n%v", err)
		}
	}
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return token, k == "NTFY_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.Recipients["my-phone"].Sink(); sc == nil || sc.Kind() != ntfy.Kind {
		t.Fatalf("my-phone has sink %v", sc)
	}
}

// TestSend_InboundSummaryOpensTheLinkInItsText: a message without linked
// items (an inbound hook's summary) opens the first link of its text.
func TestSend_InboundSummaryOpensTheLinkInItsText(t *testing.T) {
	srv := newServer(t, "", nil)
	m := delivery.Message{Kind: delivery.KindInbound, Title: "构建 42 通过", Text: "详情见 https://ci.example.com/builds/42。然后 https://ci.example.com/other", OccurredAt: t0}
	deliverytest.Outcome(t, send(newSink(t, srv, ntfy.Target{}), m), delivery.Completed, "")
	if got := srv.requests(); len(got) != 1 || got[0].Msg.Click != "https://ci.example.com/builds/42" || got[0].Msg.Title != "构建 42 通过" {
		t.Fatalf("published %+v", got)
	}
}
