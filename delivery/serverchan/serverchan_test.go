package serverchan_test

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
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/delivery/serverchan"
	"github.com/herald-bridge/herald/store"
)

const (
	turboKey = "SCT271828TxYz3141592653589abc"
	sc3Key   = "sctp12345tQw3rTy9UiOp"
)

// t0 is 16:00 in UTC+8: the service's next day begins in 8 hours.
var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

type answer struct {
	Code  int
	HTTP  int
	Drop  bool
	Sleep time.Duration
}

type call struct {
	Path string
	Body map[string]any
	Raw  []byte
}

// fakeServerChan answers both path forms on 127.0.0.1: /<key>.send
// (Turbo) and /send/<key>.send (ServerChan³), JSON {code, message, data}
// with code 0 for success.
type fakeServerChan struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []call
	answer func(n int) answer
}

func newService(t *testing.T, answer func(n int) answer) *fakeServerChan {
	f := &fakeServerChan{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServerChan) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{Path: r.URL.Path, Raw: raw}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal(raw, &c.Body) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	a := answer{}
	if f.answer != nil {
		a = f.answer(n)
	}
	if c.Path != "/"+turboKey+".send" && c.Path != "/send/"+sc3Key+".send" {
		a = answer{HTTP: http.StatusNotFound}
	}
	time.Sleep(a.Sleep)
	switch {
	case a.Drop:
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	case a.HTTP != 0:
		w.WriteHeader(a.HTTP)
		return
	}
	resp := map[string]any{"code": a.Code, "message": "", "data": map[string]any{"pushid": "8675309", "readkey": "rk"}}
	if a.Code != 0 {
		resp["message"], resp["data"] = "拒绝", nil
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (f *fakeServerChan) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func newSink(t *testing.T, f *fakeServerChan, key string, opts ...serverchan.Option) *serverchan.Sink {
	t.Helper()
	opts = append([]serverchan.Option{serverchan.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true}), robot.WithClock(func() time.Time { return t0 }))}, opts...)
	s, err := serverchan.New(key, append(opts, serverchan.WithBaseURL(f.URL))...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: serverchan.Kind, Name: "wechat-turbo"} }

func hostile() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: "期末考试 & <b>安排</b> [CQ:at,qq=all]", URL: "https://jw.example.edu.cn/notice/1?a=1&b=2", Change: delivery.ChangeNew},
	}}
}

// TestEndpoint_TurboAndServerChan3: a key picks its service's URL form;
// a base URL keeps the form.
func TestEndpoint_TurboAndServerChan3(t *testing.T) {
	for _, tc := range []struct{ base, key, want string }{
		{"", turboKey, "https://sctapi.ftqq.com/" + turboKey + ".send"},
		{"", sc3Key, "https://12345.push.ft07.com/send/" + sc3Key + ".send"},
		{"https://gw.example.com/sc/", turboKey, "https://gw.example.com/sc/" + turboKey + ".send"},
		{"https://gw.example.com/sc", sc3Key, "https://gw.example.com/sc/send/" + sc3Key + ".send"},
	} {
		if got, err := serverchan.Endpoint(tc.base, tc.key); err != nil || got != tc.want {
			t.Errorf("Endpoint(%q, key) = %q, %v; want %q", tc.base, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "SCT1/../admin", "SCT1?x=1", "SCT1#"} {
		if _, err := serverchan.Endpoint("", bad); !errors.Is(err, serverchan.ErrBadKey) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
}

// TestRender_HTMLLookingTitleIsTextWithItsLink: the desp is Markdown in
// which the title's tag, & and the CQ code are escaped text, Chinese is
// intact, and the link is a link; the title is one plain line.
func TestRender_HTMLLookingTitleIsTextWithItsLink(t *testing.T) {
	for _, key := range []string{turboKey, sc3Key} {
		f := newService(t, nil)
		out := newSink(t, f, key).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile(), Lang: "zh", Zone: time.UTC})
		deliverytest.Outcome(t, out, delivery.Completed, "")
		calls := f.Calls()
		if len(calls) != 1 {
			t.Fatalf("service got %d messages", len(calls))
		}
		b := calls[0].Body
		if b["title"] != "课程通知 有 1 项更新" {
			t.Errorf("title %q", b["title"])
		}
		desp := b["desp"].(string)
		for _, want := range []string{
			`**课程通知 有 1 项更新**`,
			`期末考试 &amp; &lt;b&gt;安排&lt;/b&gt; \[CQ:at,qq=all\]`,
			`[https://jw.example.edu.cn/notice/1?a=1&amp;b=2](https://jw.example.edu.cn/notice/1?a=1&b=2)`,
		} {
			if !strings.Contains(desp, want) {
				t.Errorf("desp lacks %q:\n%s", want, desp)
			}
		}
		if strings.Contains(desp, "<b>") {
			t.Errorf("the title's tag is markup:\n%s", desp)
		}
	}
}

// TestRender_Limits: the title is one line of at most 32 characters
// without angle brackets; the desp stays within 32 KB, cut between
// characters.
func TestRender_Limits(t *testing.T) {
	if got := serverchan.Title("作业 <b>二</b>\n截止"); got != "作业 ＜b＞二＜/b＞ 截止" {
		t.Errorf("title %q", got)
	}
	long := serverchan.Title(strings.Repeat("通知", 40))
	if n := utf8.RuneCountInString(long); n != serverchan.MaxTitle || !utf8.ValidString(long) {
		t.Errorf("long title: %d characters", n)
	}
	inline := serverchan.Markdown("标题\n构建 <b>42</b>: https://ci.example.com/42?a=1&b=2. 完成 https://x.example/(y)")
	if want := `构建 &lt;b&gt;42&lt;/b&gt;: [https://ci.example.com/42?a=1&amp;b=2](https://ci.example.com/42?a=1&b=2). 完成 https://x.example/\(y\)`; !strings.Contains(inline, want) {
		t.Errorf("inline link:\n%s", inline)
	}
	desp := serverchan.Markdown("标题\n" + strings.Repeat("很长的正文[链接](x)，", 4000))
	if len(desp) > serverchan.MaxDesp || !utf8.ValidString(desp) || !strings.HasSuffix(desp, "…") {
		t.Errorf("long desp: %d bytes", len(desp))
	}
}

// TestClassify: each answer of the service ends in its class.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name        string
		a           answer
		key         string
		result      delivery.Result
		reason      string
		after       time.Duration
		unreachable bool
	}{
		{"accepted", answer{}, turboKey, delivery.Completed, "", 0, false},
		{"accepted sc3", answer{}, sc3Key, delivery.Completed, "", 0, false},
		{"unknown key", answer{}, "SCT999TwrongKeyValue", delivery.Failed, "bad_key", 0, true},
		{"http 401", answer{HTTP: 401}, turboKey, delivery.Failed, "bad_key", 0, true},
		{"refused with a code", answer{Code: 40001}, turboKey, delivery.Failed, "code_40001", 0, false},
		{"over the 24 h limit", answer{HTTP: 429}, turboKey, delivery.RetryAfter, "rate_limited", serverchan.QuotaWait, false},
		{"server error", answer{HTTP: 503}, turboKey, delivery.Unknown, "http_503", 0, false},
		{"bad request", answer{HTTP: 400}, turboKey, delivery.Failed, "http_400", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newService(t, func(int) answer { return tc.a })
			out := newSink(t, f, tc.key).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
			deliverytest.Outcome(t, out, tc.result, tc.reason)
			if out.Unreachable != tc.unreachable || out.After != tc.after {
				t.Errorf("unreachable %v, after %v", out.Unreachable, out.After)
			}
		})
	}
	for _, raw := range []string{`{"message":"ok"}`, `<html>ok</html>`} {
		if out := serverchan.Classify(200, []byte(raw)); out.Result != delivery.Unknown {
			t.Errorf("%s: %v", raw, out.Result)
		}
	}
}

// TestRate_DailyQuotaAcrossReplicas: two replicas on one store send at
// most daily_limit messages in the service's day; the rest wait, unsent,
// until midnight UTC+8.
func TestRate_DailyQuotaAcrossReplicas(t *testing.T) {
	f := newService(t, nil)
	st := robottest.NewRig(t, t0).Store
	now := t0
	mk := func() *serverchan.Sink {
		return newSink(t, f, turboKey, serverchan.WithRobot(robot.WithClock(func() time.Time { return now })), serverchan.WithBuckets(st.Buckets()))
	}
	a, b := mk(), mk()
	send := func(i int) delivery.Outcome {
		s := a
		if i%2 == 1 {
			s = b
		}
		return s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
	}
	for i := range 8 {
		out := send(i)
		switch {
		case i < serverchan.DefaultDailyLimit && out.Result == delivery.Completed:
		case i >= serverchan.DefaultDailyLimit && out.Result == delivery.RetryAfter && out.Reason == "daily_quota" && out.After == 8*time.Hour+time.Minute:
		default:
			t.Fatalf("send %d: %+v", i, out)
		}
	}
	if n := len(f.Calls()); n != serverchan.DefaultDailyLimit {
		t.Fatalf("service got %d messages", n)
	}
	now = t0.Add(8*time.Hour + time.Minute)
	deliverytest.Outcome(t, send(8), delivery.Completed, "")
}

// TestI3_WrongKeyFailsOnceAndMarksUnreachable: a key the service does not
// know ends the push failed after one attempt and tells the owner.
func TestI3_WrongKeyFailsOnceAndMarksUnreachable(t *testing.T) {
	f := newService(t, nil)
	r := robottest.NewRig(t, t0)
	var mu sync.Mutex
	var marked []string
	r.Start("wechat-turbo", serverchan.Kind, newSink(t, f, "SCT999TwrongKeyValue"), func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			marked = append(marked, recipient+" "+reason)
			mu.Unlock()
		}
	})
	fx := r.Settled(r.Queue(hostile()), store.Failed)
	if fx.Error != "bad_key" || len(fx.Attempts) != 1 || len(f.Calls()) != 1 {
		t.Fatalf("error %q after %d attempts, %d requests", fx.Error, len(fx.Attempts), len(f.Calls()))
	}
	robottest.Wait(t, "the unreachable mark", func() bool { mu.Lock(); defer mu.Unlock(); return len(marked) == 1 })
	if marked[0] != "wechat-turbo bad_key" {
		t.Errorf("marked %v", marked)
	}
}

// TestI3_DroppedConnectionIsUnknownAndNeverSentAgain: the service read the
// request and the connection dropped: unknown, no second message.
func TestI3_DroppedConnectionIsUnknownAndNeverSentAgain(t *testing.T) {
	f := newService(t, func(int) answer { return answer{Drop: true} })
	r := robottest.NewRig(t, t0)
	r.Start("wechat-turbo", serverchan.Kind, newSink(t, f, turboKey), nil)
	k := r.Queue(hostile())
	if fx := r.Settled(k, store.Unknown); fx.Error != delivery.ReasonConnLost {
		t.Errorf("error %q", fx.Error)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond)
	if n := len(f.Calls()); n != 1 {
		t.Fatalf("service got %d messages, want 1", n)
	}
}

// TestI3_TimeoutAfterSendingIsUnknown: an answer slower than the attempt's
// timeout may still have been accepted: unknown.
func TestI3_TimeoutAfterSendingIsUnknown(t *testing.T) {
	f := newService(t, func(int) answer { return answer{Sleep: 300 * time.Millisecond} })
	s := newSink(t, f, turboKey, serverchan.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true, Timeout: 50 * time.Millisecond})))
	deliverytest.Outcome(t, s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()}), delivery.Unknown, delivery.ReasonTimeout)
}

// TestI3_OverTheLimitWaitsThenDeliversOnce: a 429 sent nothing; the push
// asks to wait out the service's 24 hours, and the next attempt arrives
// once.
func TestI3_OverTheLimitWaitsThenDeliversOnce(t *testing.T) {
	f := newService(t, func(n int) answer {
		if n == 0 {
			return answer{HTTP: 429}
		}
		return answer{}
	})
	out := newSink(t, f, turboKey).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
	deliverytest.Outcome(t, out, delivery.RetryAfter, "rate_limited")
	if out.After != serverchan.QuotaWait {
		t.Errorf("wait %v", out.After)
	}
	deliverytest.Outcome(t, newSink(t, f, turboKey).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()}), delivery.Completed, "")
	if n := len(f.Calls()); n != 2 {
		t.Fatalf("service got %d requests", n)
	}
}

// TestI10_SendKeyNeverInLogsErrorsOrMetrics: the key is in the URL; a
// dropped connection, a refused key and a failed dial are logged and
// counted without it or the URL.
func TestI10_SendKeyNeverInLogsErrorsOrMetrics(t *testing.T) {
	f := newService(t, func(n int) answer { return answer{Drop: n == 0, HTTP: 403} })
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("wechat-turbo", serverchan.Kind, newSink(t, f, turboKey, serverchan.WithRobot(robot.WithLogger(log))), func(o *delivery.Options) {
		o.Log, o.Metrics = log, delivery.NewMetrics(reg)
	})
	lost := r.Queue(hostile())
	r.Settled(lost, store.Unknown)
	refused := r.Queue(hostile())
	r.Settled(refused, store.Failed)
	// A dial that fails quotes the URL in Go's error.
	dead, err := serverchan.New(turboKey, serverchan.WithBaseURL("http://127.0.0.1:1"),
		serverchan.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true}), robot.WithLogger(log)))
	if err != nil {
		t.Fatal(err)
	}
	if out := dead.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()}); out.Result != delivery.RetryAfter {
		t.Errorf("dial failure: %+v", out)
	}
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
	if strings.Count(logs.String(), `"error"`) < 2 {
		t.Fatalf("the transport errors were not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, turboKey, f.URL+"/"+turboKey)
	if strings.Contains(metrics.String(), turboKey) {
		t.Errorf("metrics carry the key")
	}
	for _, k := range []string{lost, refused} {
		if fx := r.Effect(k); strings.Contains(fx.Error, turboKey) {
			t.Errorf("ledger error %q", fx.Error)
		}
	}
	_, err = delivery.BuildSink(&serverchan.Config{SendKey: turboKey, BaseURL: "ftp://push.example/x"}, delivery.SinkDeps{Name: "wechat-turbo"})
	if err == nil || strings.Contains(err.Error(), turboKey) {
		t.Errorf("constructor error %v", err)
	}
}

// TestCheckConfig_ServerChanShapeWithLineNumbers: each problem of a
// serverchan section is reported at its line, never quoting the key; a
// good section loads.
func TestCheckConfig_ServerChanShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-key.serverchan: sendkey is required`,
		`testdata/bad.yaml:5: recipients.slashed-key.serverchan.sendkey: must be the key as the service shows it`,
		`testdata/bad.yaml:7: recipients.bad-sc3.serverchan.sendkey: a ServerChan³ key is sctp<uid>t…`,
		`testdata/bad.yaml:9: recipients.plain-http.serverchan.base_url: must use https`,
		`testdata/bad.yaml:11: recipients.negative.serverchan.daily_limit: must be between 1 and 10000`,
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
	for _, k := range []string{"SCT1/../x", "sctpXt123"} {
		if strings.Contains(err.Error(), k) {
			t.Errorf("config errors quote the key %q", k)
		}
	}
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return turboKey, k == "SERVERCHAN_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cfg.Recipients["wechat-turbo"].Sink().(*serverchan.Config); !ok || c.SendKey != turboKey || c.DailyLimit != 0 {
		t.Fatalf("wechat-turbo has sink %#v", cfg.Recipients["wechat-turbo"].Sink())
	}
}
