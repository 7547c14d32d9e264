package pushplus_test

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
	"github.com/herald-bridge/herald/delivery/pushplus"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/store"
)

const token = "9b2f4e6a8c1d3f5a7b9c2e4f6a8b1d3c"

// t0 is 16:00 in UTC+8: the service's next day begins in 8 hours.
var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// answer is how the fake service answers: a code in an HTTP 200 JSON
// body, another HTTP status, or a dropped connection.
type answer struct {
	Code  int
	HTTP  int
	Drop  bool
	Sleep time.Duration
}

// fakePushPlus speaks PushPlus's /send on 127.0.0.1: a wrong token is
// code 903, success is code 200 with the message's serial number.
type fakePushPlus struct {
	*httptest.Server
	mu     sync.Mutex
	got    []map[string]any
	raw    [][]byte
	answer func(n int) answer
}

func newService(t *testing.T, answer func(n int) answer) *fakePushPlus {
	f := &fakePushPlus{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakePushPlus) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if r.URL.Path != "/send" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal(raw, &body) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	n := len(f.got)
	f.got = append(f.got, body)
	f.raw = append(f.raw, raw)
	f.mu.Unlock()
	a := answer{Code: 200}
	if f.answer != nil {
		a = f.answer(n)
	}
	if body["token"] != token {
		a = answer{Code: 903}
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
	resp := map[string]any{"code": a.Code, "msg": "请求成功", "data": nil}
	if a.Code == 200 {
		resp["data"] = "a1b2c3d4e5f6"
	} else {
		resp["msg"] = "拒绝"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (f *fakePushPlus) Got() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.got...)
}

func newSink(t *testing.T, f *fakePushPlus, tok string, opts ...pushplus.Option) *pushplus.Sink {
	t.Helper()
	opts = append([]pushplus.Option{pushplus.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true}), robot.WithClock(func() time.Time { return t0 }))}, opts...)
	s, err := pushplus.New(tok, append(opts, pushplus.WithBaseURL(f.URL))...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: pushplus.Kind, Name: "wechat-me"} }

func hostile() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: "期末考试 & <b>安排</b> [CQ:at,qq=all]", URL: "https://jw.example.edu.cn/notice/1?a=1&b=2", Change: delivery.ChangeNew},
	}}
}

// TestRender_HTMLLookingTitleIsTextWithItsLink: the content is HTML in
// which the title's tag is escaped text, Chinese, & and the CQ code are
// intact, and the link is a link.
func TestRender_HTMLLookingTitleIsTextWithItsLink(t *testing.T) {
	f := newService(t, nil)
	out := newSink(t, f, token).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile(), Lang: "zh", Zone: time.UTC})
	deliverytest.Outcome(t, out, delivery.Completed, "")
	if out.ProviderID != "a1b2c3d4e5f6" {
		t.Errorf("provider id %q", out.ProviderID)
	}
	got := f.Got()
	if len(got) != 1 {
		t.Fatalf("service got %d messages", len(got))
	}
	b := got[0]
	if b["template"] != "html" || b["title"] != "课程通知 有 1 项更新" || b["topic"] != nil {
		t.Errorf("body %v", b)
	}
	content := b["content"].(string)
	for _, want := range []string{
		"期末考试 &amp; &lt;b&gt;安排&lt;/b&gt; [CQ:at,qq=all]",
		`<a href="https://jw.example.edu.cn/notice/1?a=1&amp;b=2">https://jw.example.edu.cn/notice/1?a=1&amp;b=2</a>`,
		"<b>课程通知 有 1 项更新</b>",
	} {
		if !strings.Contains(content, want) {
			t.Errorf("content lacks %q:\n%s", want, content)
		}
	}
	if strings.Contains(content, "<b>安排") {
		t.Errorf("the title's tag is markup:\n%s", content)
	}
}

// TestRender_TitleIsOneMarkupFreeLine: a title that carries an item's
// title (a deadline) has no angle brackets and no line breaks, and is cut
// at MaxTitle characters, Chinese intact.
func TestRender_TitleIsOneMarkupFreeLine(t *testing.T) {
	if got := pushplus.Title("作业 <b>二</b>\n截止 & 提交"); got != "作业 ＜b＞二＜/b＞ 截止 & 提交" {
		t.Errorf("title %q", got)
	}
	long := pushplus.Title(strings.Repeat("通知", pushplus.MaxTitle))
	if n := utf8.RuneCountInString(long); n != pushplus.MaxTitle || !strings.HasSuffix(long, "…") || !utf8.ValidString(long) {
		t.Errorf("long title: %d characters", n)
	}
	inline := pushplus.HTML("标题\n构建 <b>42</b>: https://ci.example.com/42?a=1&b=2. 完成")
	if want := `构建 &lt;b&gt;42&lt;/b&gt;: <a href="https://ci.example.com/42?a=1&amp;b=2">https://ci.example.com/42?a=1&amp;b=2</a>. 完成`; !strings.Contains(inline, want) {
		t.Errorf("inline link:\n%s", inline)
	}
	content := pushplus.HTML("标题\n" + strings.Repeat("很长的正文，", 3000))
	if !utf8.ValidString(content) || !strings.HasSuffix(content, "…") || utf8.RuneCountInString(content) > pushplus.MaxContent+100 {
		t.Errorf("long content: %d characters", utf8.RuneCountInString(content))
	}
}

// TestTopicGoesToTheGroup: a topic is sent, so the group's subscribers
// get the message.
func TestTopicGoesToTheGroup(t *testing.T) {
	f := newService(t, nil)
	s, err := pushplus.New(token, pushplus.WithTopic("class2026"), pushplus.WithBaseURL(f.URL+"/"), pushplus.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true})))
	if err != nil {
		t.Fatal(err)
	}
	deliverytest.Outcome(t, s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()}), delivery.Completed, "")
	if got := f.Got(); got[0]["topic"] != "class2026" {
		t.Errorf("body %v", got[0])
	}
}

// TestClassify: each answer of the service ends in its class.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name        string
		a           answer
		tok         string
		result      delivery.Result
		reason      string
		after       time.Duration
		unreachable bool
	}{
		{"accepted", answer{Code: 200}, token, delivery.Completed, "", 0, false},
		{"invalid token", answer{}, "wrong-token-value", delivery.Failed, "bad_token", 0, true},
		{"unauthorized", answer{Code: 401}, token, delivery.Failed, "bad_token", 0, true},
		{"ip not whitelisted", answer{Code: 403}, token, delivery.Failed, "ip_not_allowed", 0, true},
		{"no permission", answer{Code: 805}, token, delivery.Failed, "no_permission", 0, true},
		{"not verified", answer{Code: 905}, token, delivery.Failed, "not_verified", 0, true},
		{"restricted for today", answer{Code: 900}, token, delivery.RetryAfter, "account_restricted", 8*time.Hour + time.Minute, false},
		{"system error", answer{Code: 500}, token, delivery.Unknown, "code_500", 0, false},
		{"data error", answer{Code: 600}, token, delivery.Failed, "code_600", 0, false},
		{"insufficient points", answer{Code: 888}, token, delivery.Failed, "code_888", 0, false},
		{"http 429", answer{HTTP: 429}, token, delivery.RetryAfter, "rate_limited", pushplus.TooFastWait, false},
		{"http 403", answer{HTTP: 403}, token, delivery.Failed, "bad_token", 0, true},
		{"http 502", answer{HTTP: 502}, token, delivery.Unknown, "http_502", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newService(t, func(int) answer { return tc.a })
			out := newSink(t, f, tc.tok).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
			deliverytest.Outcome(t, out, tc.result, tc.reason)
			if out.Unreachable != tc.unreachable || out.After != tc.after {
				t.Errorf("unreachable %v, after %v", out.Unreachable, out.After)
			}
		})
	}
	// An HTTP 200 without a code is never taken for success.
	for _, raw := range []string{`{"msg":"请求成功"}`, `<html>ok</html>`} {
		if out := pushplus.Classify(200, []byte(raw), t0); out.Result != delivery.Unknown {
			t.Errorf("%s: %v", raw, out.Result)
		}
	}
}

// TestRate_DailyQuotaAcrossReplicas: two replicas on one store send at
// most daily_limit messages in the service's day; the rest wait, unsent,
// until the next day begins at midnight UTC+8.
func TestRate_DailyQuotaAcrossReplicas(t *testing.T) {
	f := newService(t, nil)
	st := robottest.NewRig(t, t0).Store
	now := t0
	clock := pushplus.WithRobot(robot.WithClock(func() time.Time { return now }))
	mk := func() *pushplus.Sink {
		s, err := pushplus.New(token, pushplus.WithBaseURL(f.URL), pushplus.WithDailyLimit(3),
			pushplus.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true})), clock, pushplus.WithBuckets(st.Buckets()))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := mk(), mk()
	send := func(i int) delivery.Outcome {
		s := a
		if i%2 == 1 {
			s = b
		}
		return s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
	}
	for i := range 5 {
		out := send(i)
		switch {
		case i < 3 && out.Result == delivery.Completed:
		case i >= 3 && out.Result == delivery.RetryAfter && out.Reason == "daily_quota" && out.After == 8*time.Hour+time.Minute:
		default:
			t.Fatalf("send %d: %+v", i, out)
		}
	}
	if n := len(f.Got()); n != 3 {
		t.Fatalf("service got %d messages, want 3", n)
	}
	// Another recipient on the same account, sending to a group, shares
	// the account's quota.
	group, err := pushplus.New(token, pushplus.WithTopic("class2026"), pushplus.WithBaseURL(f.URL), pushplus.WithDailyLimit(3),
		pushplus.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true})), clock, pushplus.WithBuckets(st.Buckets()))
	if err != nil {
		t.Fatal(err)
	}
	deliverytest.Outcome(t, group.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()}), delivery.RetryAfter, "daily_quota")
	now = t0.Add(8*time.Hour + time.Minute)
	deliverytest.Outcome(t, send(5), delivery.Completed, "")
}

// TestI3_WrongTokenFailsOnceAndMarksUnreachable: code 903 ends the push
// failed after one attempt and tells the owner.
func TestI3_WrongTokenFailsOnceAndMarksUnreachable(t *testing.T) {
	f := newService(t, nil)
	r := robottest.NewRig(t, t0)
	var mu sync.Mutex
	var marked []string
	r.Start("wechat-me", pushplus.Kind, newSink(t, f, "wrong-token-value"), func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			marked = append(marked, recipient+" "+reason)
			mu.Unlock()
		}
	})
	fx := r.Settled(r.Queue(hostile()), store.Failed)
	if fx.Error != "bad_token" || len(fx.Attempts) != 1 || len(f.Got()) != 1 {
		t.Fatalf("error %q after %d attempts, %d requests", fx.Error, len(fx.Attempts), len(f.Got()))
	}
	robottest.Wait(t, "the unreachable mark", func() bool { mu.Lock(); defer mu.Unlock(); return len(marked) == 1 })
	if marked[0] != "wechat-me bad_token" {
		t.Errorf("marked %v", marked)
	}
}

// TestI3_RestrictedAccountWaitsForTheNextDayThenDeliversOnce: code 900
// sent nothing; the push waits for the service's next day and arrives
// once.
func TestI3_RestrictedAccountWaitsForTheNextDayThenDeliversOnce(t *testing.T) {
	f := newService(t, func(n int) answer {
		if n == 0 {
			return answer{Code: 900}
		}
		return answer{Code: 200}
	})
	late := time.Date(2026, 12, 1, 15, 50, 0, 0, time.UTC) // 23:50 in UTC+8
	r := robottest.NewRig(t, late)
	r.Start("wechat-me", pushplus.Kind, newSink(t, f, token, pushplus.WithRobot(robot.WithClock(r.Clock.Now))), nil)
	k := r.Queue(hostile())
	fx := r.Settled(k, store.Pending)
	next := time.Date(2026, 12, 2, 0, 1, 0, 0, time.FixedZone("UTC+8", 8*3600))
	if fx.Error != "account_restricted" || !fx.NotBefore.Equal(next) {
		t.Fatalf("after 900: %q, next attempt %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(11 * time.Minute)
	r.Settled(k, store.Completed)
	if n := len(f.Got()); n != 2 {
		t.Fatalf("service got %d requests", n)
	}
}

// TestI3_DroppedConnectionIsUnknownAndNeverSentAgain: the service read the
// request and the connection dropped: unknown, no second message.
func TestI3_DroppedConnectionIsUnknownAndNeverSentAgain(t *testing.T) {
	f := newService(t, func(int) answer { return answer{Drop: true} })
	r := robottest.NewRig(t, t0)
	r.Start("wechat-me", pushplus.Kind, newSink(t, f, token), nil)
	k := r.Queue(hostile())
	if fx := r.Settled(k, store.Unknown); fx.Error != delivery.ReasonConnLost {
		t.Errorf("error %q", fx.Error)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond)
	if n := len(f.Got()); n != 1 {
		t.Fatalf("service got %d messages, want 1", n)
	}
}

// TestI3_TimeoutAfterSendingIsUnknown: an answer slower than the attempt's
// timeout may still have been accepted: unknown.
func TestI3_TimeoutAfterSendingIsUnknown(t *testing.T) {
	f := newService(t, func(int) answer { return answer{Code: 200, Sleep: 300 * time.Millisecond} })
	s := newSink(t, f, token, pushplus.WithRobot(robot.WithEgress(egress.Options{AllowPrivate: true, Timeout: 50 * time.Millisecond})))
	deliverytest.Outcome(t, s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()}), delivery.Unknown, delivery.ReasonTimeout)
}

// TestI10_TokenNeverInLogsErrorsOrMetrics: a dropped connection and a
// refused token are logged and counted without the token.
func TestI10_TokenNeverInLogsErrorsOrMetrics(t *testing.T) {
	f := newService(t, func(n int) answer { return answer{Drop: n == 0, Code: 401} })
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("wechat-me", pushplus.Kind, newSink(t, f, token, pushplus.WithRobot(robot.WithLogger(log))), func(o *delivery.Options) {
		o.Log, o.Metrics = log, delivery.NewMetrics(reg)
	})
	lost := r.Queue(hostile())
	r.Settled(lost, store.Unknown)
	refused := r.Queue(hostile())
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
	if !strings.Contains(logs.String(), `"error"`) {
		t.Fatalf("the dropped connection was not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, token)
	if strings.Contains(metrics.String(), token) {
		t.Errorf("metrics carry the token")
	}
	for _, k := range []string{lost, refused} {
		if fx := r.Effect(k); strings.Contains(fx.Error, token) {
			t.Errorf("ledger error %q", fx.Error)
		}
	}
	_, err = delivery.BuildSink(&pushplus.Config{Token: token, BaseURL: "ftp://push.example/" + token}, delivery.SinkDeps{Name: "wechat-me"})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("constructor error %v", err)
	}
}

// TestCheckConfig_PushPlusShapeWithLineNumbers: each problem of a
// pushplus section is reported at its line; a good section loads.
func TestCheckConfig_PushPlusShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-token.pushplus: token is required`,
		`testdata/bad.yaml:5: recipients.plain-http.pushplus.base_url: must use https`,
		`testdata/bad.yaml:7: recipients.too-many.pushplus.daily_limit: must be between 1 and 1000`,
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
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return token, k == "PUSHPLUS_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cfg.Recipients["wechat-class"].Sink().(*pushplus.Config); !ok || c.Token != token || c.Topic != "class2026" || c.DailyLimit != 1000 {
		t.Fatalf("wechat-class has sink %#v", cfg.Recipients["wechat-class"].Sink())
	}
}
