package bark_test

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
	"github.com/herald-bridge/herald/delivery/bark"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/store"
)

const deviceKey = "Xq7mVBoFD37zQVN29RhuMz"

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// fault is how the fake server answers one push instead of pushing it.
type fault struct {
	Status  int    // HTTP status; 0: the same as Code
	Code    int    // bark-server's code
	Message string // bark-server's message
	Header  http.Header
	Raw     string // a body other than bark-server's JSON
	Drop    bool   // read the request, close without an answer
	Delay   time.Duration
}

// server is a fake bark-server: POST /push with a JSON body naming the
// device key, its {"code","message","timestamp"} answers.
type server struct {
	*httptest.Server
	t     testing.TB
	keys  map[string]bool // registered devices
	fault func(n int) *fault
	mu    sync.Mutex
	got   []received
}

type received struct {
	Method, Path, ContentType string
	Raw                       []byte
	Push                      bark.Push
}

func newServer(t testing.TB, f func(n int) *fault) *server {
	t.Helper()
	s := &server{t: t, keys: map[string]bool{deviceKey: true}, fault: f}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func answer(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg, "timestamp": t0.Unix()})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rc := received{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Raw: raw}
	if r.URL.Path != "/push" || !strings.HasPrefix(rc.ContentType, "application/json") || json.Unmarshal(raw, &rc.Push) != nil {
		answer(w, 400, 400, "request bind failed: bad request")
		return
	}
	s.mu.Lock()
	n := len(s.got)
	s.got = append(s.got, rc)
	s.mu.Unlock()
	if f := s.fault; f != nil {
		if a := f(n); a != nil {
			time.Sleep(a.Delay)
			for k, v := range a.Header {
				w.Header()[k] = v
			}
			switch {
			case a.Drop:
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					_ = conn.Close()
				}
			case a.Raw != "":
				w.WriteHeader(a.Status)
				_, _ = io.WriteString(w, a.Raw)
			default:
				status := a.Status
				if status == 0 {
					status = a.Code
				}
				answer(w, status, a.Code, a.Message)
			}
			return
		}
	}
	switch k := rc.Push.DeviceKey; {
	case k == "":
		answer(w, 400, 400, "device key is empty")
	case !s.keys[k]:
		answer(w, 400, 400, "failed to get device token: failed to get ["+k+"] device token from database")
	default:
		answer(w, 200, 200, "success")
	}
}

func (s *server) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

func newSink(t *testing.T, srv *server, tg bark.Target, opts ...bark.Option) *bark.Sink {
	t.Helper()
	if tg.URL == "" {
		tg.URL = srv.URL + "/" + deviceKey
	}
	opts = append([]bark.Option{bark.WithEgress(egress.Options{AllowPrivate: true}), bark.WithClock(func() time.Time { return t0 })}, opts...)
	s, err := bark.New(tg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: bark.Kind, Name: "my-iphone"} }

const (
	hostileTitle = "期末考试 & <b>补考</b> [CQ:at,qq=all] 安排"
	link         = "https://jw.example.edu.cn/notice/1?a=1&b=2"
)

func news() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: hostileTitle, URL: link, Change: delivery.ChangeNew},
	}}
}

func send(s *bark.Sink, m delivery.Message) delivery.Outcome {
	return s.Send(context.Background(), delivery.Delivery{Key: "fx_1", To: to(), Message: m, Lang: "zh", Zone: time.UTC})
}

// TestSend_HostileTitleArrivesAsPlainTextWithItsLink: a title with
// Chinese text, &, <b> and a CQ code arrives character for character as
// the push's plain body, the item's link is the URL the notification
// opens, the device key travels in the body and never in the path.
func TestSend_HostileTitleArrivesAsPlainTextWithItsLink(t *testing.T) {
	srv := newServer(t, nil)
	out := send(newSink(t, srv, bark.Target{}), news())
	deliverytest.Outcome(t, out, delivery.Completed, "")
	got := srv.requests()
	if len(got) != 1 {
		t.Fatalf("server got %d requests", len(got))
	}
	r := got[0]
	if r.Method != http.MethodPost || r.Path != "/push" || strings.Contains(r.Path, deviceKey) {
		t.Errorf("request %s %s", r.Method, r.Path)
	}
	p := r.Push
	if p.DeviceKey != deviceKey || p.URL != link || p.Group != "课程通知" || !strings.Contains(p.Title, "课程通知") {
		t.Errorf("push %+v", p)
	}
	if !strings.Contains(p.Body, hostileTitle) || !strings.Contains(p.Body, link) {
		t.Errorf("body lacks the title or the link:\n%s", p.Body)
	}
	for _, bad := range []string{"&amp;", "&lt;", `\u003c`, `\u0026`, "**", `"markdown"`} {
		if bytes.Contains(r.Raw, []byte(bad)) {
			t.Errorf("request carries %q: %s", bad, r.Raw)
		}
	}
}

// TestSend_SelfHostedUnderAPathAndGroup: a self-hosted server behind a
// path gets /push under it; the configured group wins.
func TestSend_SelfHostedUnderAPathAndGroup(t *testing.T) {
	inner := newServer(t, nil)
	var path string
	proxy := httptest.NewServer(http.StripPrefix("/bark", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		inner.Config.Handler.ServeHTTP(w, r)
	})))
	t.Cleanup(proxy.Close)
	deliverytest.Outcome(t, send(newSink(t, inner, bark.Target{URL: proxy.URL + "/bark/" + deviceKey + "/", Group: "school"}), news()), delivery.Completed, "")
	if got := inner.requests(); path != "/push" || len(got) != 1 || got[0].Push.Group != "school" {
		t.Errorf("pushed at %q: %+v", path, got)
	}
}

// TestLimits_LongTextFitsTheAPNsPayloadNeverCuttingTheLink: a long
// Chinese text is cut so title, body, link and group fit Apple's 4096
// bytes as bark-server encodes them; the link stays whole.
func TestLimits_LongTextFitsTheAPNsPayloadNeverCuttingTheLink(t *testing.T) {
	srv := newServer(t, nil)
	s := newSink(t, srv, bark.Target{})
	long := strings.Repeat("通知：明天上午九点在图书馆三楼召开全体会议，请准时参加。<注意>", 100)
	var items []delivery.Item
	var links []string
	for i := range 20 {
		u := fmt.Sprintf("https://jw.example.edu.cn/notice/%03d/%s", i, strings.Repeat("x", 200))
		links = append(links, u)
		items = append(items, delivery.Item{ID: fmt.Sprint(i), Title: "课程", URL: u, Change: delivery.ChangeNew})
	}
	for _, m := range []delivery.Message{
		{Kind: delivery.KindInbound, Title: hostileTitle, Text: long, OccurredAt: t0, Items: []delivery.Item{{ID: "1", Title: "会议", URL: link}}},
		{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: items},
	} {
		deliverytest.Outcome(t, send(s, m), delivery.Completed, "")
	}
	got := srv.requests()
	if len(got) != 2 {
		t.Fatalf("server got %d requests", len(got))
	}
	for i, r := range got {
		p := r.Push
		size := 0
		for _, f := range []string{p.Title, p.Body, p.URL, p.URL, p.Group, p.Group} {
			b, _ := json.Marshal(f)
			size += len(b)
		}
		if size > bark.MaxPayload-256 || !utf8.ValidString(p.Body) || !strings.HasSuffix(p.Body, "…") {
			t.Errorf("push %d: %d payload bytes, valid %v, ends %q", i, size, utf8.ValidString(p.Body), p.Body[max(len(p.Body)-8, 0):])
		}
	}
	if got[0].Push.URL != link || got[1].Push.URL != links[0] {
		t.Errorf("urls %q, %q", got[0].Push.URL, got[1].Push.URL)
	}
	for _, w := range regexp.MustCompile(`https://\S+`).FindAllString(got[1].Push.Body, -1) {
		found := false
		for _, l := range links {
			found = found || l == w
		}
		if !found {
			t.Errorf("a link was cut: %q", w)
		}
	}
}

// TestI3_CodeInsideHTTP200IsRead: bark-server's code is read even when
// the HTTP status says 200; only code 200 is completed.
func TestI3_CodeInsideHTTP200IsRead(t *testing.T) {
	for _, tc := range []struct {
		name        string
		f           fault
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{"code 400 unknown key", fault{Status: 200, Code: 400, Message: "failed to get device token: failed to get [" + deviceKey + "] device token from database"}, delivery.Failed, "bad_key", true},
		{"code 500 push failed", fault{Status: 200, Code: 500, Message: "push failed: BadDeviceToken"}, delivery.Failed, "device_gone", true},
		{"code 400 other", fault{Status: 200, Code: 400, Message: "request bind failed: x"}, delivery.Failed, "code_400", false},
		{"no code", fault{Status: 200, Raw: "<html>captive portal</html>"}, delivery.Unknown, "bad_response", false},
		{"empty json", fault{Status: 200, Raw: "{}"}, delivery.Unknown, "bad_response", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			srv := newServer(t, func(int) *fault { return &f })
			out := send(newSink(t, srv, bark.Target{}), news())
			deliverytest.Outcome(t, out, tc.result, tc.reason)
			if out.Unreachable != tc.unreachable {
				t.Errorf("unreachable %v", out.Unreachable)
			}
		})
	}
}

// TestClassify_ErrorAnswers: each of bark-server's error answers ends in
// its class.
func TestClassify_ErrorAnswers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		f           fault
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{"key empty", fault{Code: 400, Message: "device key is empty"}, delivery.Failed, "bad_key", true},
		{"bind failed", fault{Code: 400, Message: "request bind failed: invalid character"}, delivery.Failed, "code_400", false},
		{"basic auth", fault{Status: 418, Raw: "I'm a teapot"}, delivery.Failed, "bad_credentials", true},
		{"unregistered", fault{Code: 500, Message: "push failed: Unregistered"}, delivery.Failed, "device_gone", true},
		{"apple busy", fault{Code: 500, Message: "push failed: TooManyRequests"}, delivery.RetryAfter, "apns_rate_limited", false},
		{"apple down", fault{Code: 500, Message: "push failed: ServiceUnavailable"}, delivery.RetryAfter, "apns_unavailable", false},
		{"too large", fault{Code: 500, Message: "push failed: PayloadTooLarge"}, delivery.Failed, "too_large", false},
		{"push failed other", fault{Code: 500, Message: "push failed: MissingTopic"}, delivery.Failed, "push_failed", false},
		{"proxy 502", fault{Status: 502, Raw: "<html>bad gateway</html>"}, delivery.Unknown, "http_502", false},
		{"500 not a push", fault{Code: 500, Message: "database locked"}, delivery.Unknown, "http_500", false},
		{"429", fault{Status: 429, Raw: "slow down", Header: http.Header{"Retry-After": {"7"}}}, delivery.RetryAfter, "rate_limited", false},
		{"redirect", fault{Status: 301, Raw: "moved", Header: http.Header{"Location": {"https://example.com/"}}}, delivery.Failed, "redirect", false},
		{"404", fault{Status: 404, Raw: "404 page not found"}, delivery.Failed, "http_404", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			srv := newServer(t, func(int) *fault { return &f })
			out := send(newSink(t, srv, bark.Target{}), news())
			deliverytest.Outcome(t, out, tc.result, tc.reason)
			if out.Unreachable != tc.unreachable {
				t.Errorf("unreachable %v", out.Unreachable)
			}
			if tc.name == "429" && out.After != 7*time.Second {
				t.Errorf("after %v, want the Retry-After", out.After)
			}
		})
	}
}

// TestBadKeyFailsAfterOneAttemptAndMarksUnreachable: a key the server
// does not know ends the push failed at once and tells the owner.
func TestBadKeyFailsAfterOneAttemptAndMarksUnreachable(t *testing.T) {
	srv := newServer(t, nil)
	r := robottest.NewRig(t, t0)
	var mu sync.Mutex
	var marked []string
	r.Start("my-iphone", bark.Kind, newSink(t, srv, bark.Target{URL: srv.URL + "/WrongKey0000000000000"}), func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			marked = append(marked, recipient+" "+reason)
			mu.Unlock()
		}
	})
	fx := r.Settled(r.Queue(news()), store.Failed)
	if fx.Error != "bad_key" || len(fx.Attempts) != 1 || len(srv.requests()) != 1 {
		t.Fatalf("error %q after %d attempts, %d requests", fx.Error, len(fx.Attempts), len(srv.requests()))
	}
	robottest.Wait(t, "the unreachable mark", func() bool { mu.Lock(); defer mu.Unlock(); return len(marked) > 0 })
	mu.Lock()
	defer mu.Unlock()
	if len(marked) != 1 || marked[0] != "my-iphone bad_key" {
		t.Errorf("unreachable marks %v", marked)
	}
}

// TestI3_RateLimitedWaitsAndIsDeliveredOnce: a 429 sent nothing; the
// push waits and then arrives once.
func TestI3_RateLimitedWaitsAndIsDeliveredOnce(t *testing.T) {
	srv := newServer(t, func(n int) *fault {
		if n == 0 {
			return &fault{Status: 429, Raw: "too many requests"}
		}
		return nil
	})
	r := robottest.NewRig(t, t0)
	r.Start("my-iphone", bark.Kind, newSink(t, srv, bark.Target{}, bark.WithClock(r.Clock.Now)), nil)
	k := r.Queue(news())
	fx := r.Settled(k, store.Pending)
	if fx.Error != "rate_limited" || !fx.NotBefore.Equal(t0.Add(bark.RateLimitedWait)) {
		t.Fatalf("after 429: error %q, next attempt %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(bark.RateLimitedWait)
	r.Settled(k, store.Completed)
	if got := srv.requests(); len(got) != 2 {
		t.Fatalf("server got %d requests, want the refused one and the delivered one", len(got))
	}
}

// TestI3_TimeoutAfterSendingIsUnknownAndNeverSentAgain: the server took
// the push and did not answer in time: unknown, never sent again.
func TestI3_TimeoutAfterSendingIsUnknownAndNeverSentAgain(t *testing.T) {
	srv := newServer(t, func(int) *fault { return &fault{Delay: 500 * time.Millisecond, Code: 200, Message: "success"} })
	r := robottest.NewRig(t, t0)
	s := newSink(t, srv, bark.Target{}, bark.WithEgress(egress.Options{AllowPrivate: true, Timeout: 100 * time.Millisecond}), bark.WithClock(r.Clock.Now))
	r.Start("my-iphone", bark.Kind, s, nil)
	k := r.Queue(news())
	if fx := r.Settled(k, store.Unknown); fx.Error != delivery.ReasonTimeout {
		t.Errorf("error %q, want %s", fx.Error, delivery.ReasonTimeout)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond) // polls of the dispatcher, which must find nothing to send
	if got := srv.requests(); len(got) != 1 {
		t.Fatalf("server got %d pushes, want 1", len(got))
	}
}

// TestI3_DroppedConnectionIsUnknown: the server read the push and the
// connection dropped: unknown.
func TestI3_DroppedConnectionIsUnknown(t *testing.T) {
	srv := newServer(t, func(int) *fault { return &fault{Drop: true} })
	deliverytest.Outcome(t, send(newSink(t, srv, bark.Target{}), news()), delivery.Unknown, delivery.ReasonConnLost)
}

// TestI3_RefusedConnectionIsRetriedNotUnknown: nothing left, so the push
// may go again.
func TestI3_RefusedConnectionIsRetriedNotUnknown(t *testing.T) {
	srv := newServer(t, nil)
	s := newSink(t, srv, bark.Target{})
	srv.Close()
	deliverytest.Outcome(t, send(s, news()), delivery.RetryAfter, delivery.ReasonConnectFailed)
}

// TestI10_DeviceKeyNeverInLogsErrorsOrMetrics: a dropped connection and
// a refused key are logged, counted and recorded without the key or the
// device URL, though the server's answer quotes the key.
func TestI10_DeviceKeyNeverInLogsErrorsOrMetrics(t *testing.T) {
	srv := newServer(t, func(n int) *fault {
		if n == 0 {
			return &fault{Drop: true}
		}
		return &fault{Code: 400, Message: "failed to get device token: failed to get [" + deviceKey + "] device token from database"}
	})
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("my-iphone", bark.Kind, newSink(t, srv, bark.Target{}, bark.WithLogger(log)), func(o *delivery.Options) {
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
	secrets := []string{deviceKey, srv.URL + "/" + deviceKey}
	if !strings.Contains(logs.String(), `"error"`) {
		t.Fatalf("the dropped connection was not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, secrets...)
	for _, s := range secrets {
		if strings.Contains(metrics.String(), s) {
			t.Errorf("metrics carry %q", s)
		}
	}
	if !strings.Contains(metrics.String(), `kind="bark",result="unknown"`) {
		t.Errorf("metrics lack the sink's attempts:\n%s", metrics.String())
	}
	for _, k := range []string{lost, refused} {
		if fx := r.Effect(k); strings.Contains(fx.Error, deviceKey) {
			t.Errorf("ledger error %q carries the key", fx.Error)
		}
	}
	for _, u := range []string{"ftp://api.day.app/" + deviceKey, "https://10.0.0.1/" + deviceKey, "https://api.day.app:8443/" + deviceKey} {
		_, err = delivery.BuildSink(&bark.Config{URL: u}, delivery.SinkDeps{Name: "my-iphone"})
		if err == nil || strings.Contains(err.Error(), deviceKey) {
			t.Errorf("constructor error %v", err)
		}
	}
}

// TestCheckConfig_BarkShapeWithLineNumbers: every problem of a bark
// section is reported at its line, none quoting the key.
func TestCheckConfig_BarkShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-url.bark: url is required`,
		`testdata/bad.yaml:5: recipients.no-key.bark.url: must end in the device key`,
		`testdata/bad.yaml:7: recipients.plain-http.bark.url: must use https`,
		`testdata/bad.yaml:9: unknown key "sound" in recipients.unknown-key.bark`,
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
	if strings.Contains(err.Error(), deviceKey) {
		t.Errorf("config errors carry the key:\n%v", err)
	}
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return deviceKey, k == "BARK_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.Recipients["my-iphone"].Sink(); sc == nil || sc.Kind() != bark.Kind {
		t.Fatalf("my-iphone has sink %v", sc)
	}
}

// TestSend_InboundSummaryOpensTheLinkInItsText: a message without linked
// items (an inbound hook's summary) opens the first link of its text.
func TestSend_InboundSummaryOpensTheLinkInItsText(t *testing.T) {
	srv := newServer(t, nil)
	m := delivery.Message{Kind: delivery.KindInbound, Title: "构建 42 通过", Text: "详情见 https://ci.example.com/builds/42。然后 https://ci.example.com/other", OccurredAt: t0}
	deliverytest.Outcome(t, send(newSink(t, srv, bark.Target{}), m), delivery.Completed, "")
	if got := srv.requests(); len(got) != 1 || got[0].Push.URL != "https://ci.example.com/builds/42" || got[0].Push.Title != "构建 42 通过" {
		t.Fatalf("pushed %+v", got)
	}
}
