package onebot_test

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
	"github.com/herald-bridge/herald/delivery/onebot"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/store"
)

const token = "nb-3f9c1e7a5d2b4c8e"

const group = 734291856

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// answer is how the fake implementation answers one request.
type answer struct {
	HTTP    int // 0: 200
	Status  string
	Retcode int
	Drop    bool
	Sleep   time.Duration
}

type call struct {
	Path, Auth, ContentType string
	Body                    map[string]any
	Raw                     []byte
}

// fakeBot is a OneBot v11 HTTP API on 127.0.0.1: it checks the bearer
// token like Lagrange (missing 401, wrong 403), wants exactly
// application/json, and answers {status, retcode, data}.
type fakeBot struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []call
	answer func(n int) answer
}

func newBot(t *testing.T, answer func(n int) answer) *fakeBot {
	b := &fakeBot{answer: answer}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.Close)
	return b
}

func (b *fakeBot) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Raw: raw}
	_ = json.Unmarshal(raw, &c.Body)
	b.mu.Lock()
	n := len(b.calls)
	b.calls = append(b.calls, c)
	b.mu.Unlock()
	switch {
	case c.Auth == "":
		w.Header().Set("WWW-Authenticate", "Bearer")
		w.WriteHeader(http.StatusUnauthorized)
		return
	case c.Auth != "Bearer "+token:
		w.WriteHeader(http.StatusForbidden)
		return
	case c.ContentType != "application/json":
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	a := answer{Status: "ok"}
	if b.answer != nil {
		a = b.answer(n)
	}
	time.Sleep(a.Sleep)
	if a.Drop {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	if a.HTTP != 0 {
		w.WriteHeader(a.HTTP)
		return
	}
	body := map[string]any{"status": a.Status, "retcode": a.Retcode, "data": nil, "echo": nil}
	if a.Retcode == 0 {
		body["data"] = map[string]any{"message_id": 1804289383}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func (b *fakeBot) Calls() []call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]call(nil), b.calls...)
}

// cqString is the message as an implementation turns a segment array into
// its CQ-code string form: text escaped, other segments as CQ codes.
func cqString(t *testing.T, msg any) string {
	t.Helper()
	segs, ok := msg.([]any)
	if !ok {
		t.Fatalf("message is %T, want a segment array", msg)
	}
	var b strings.Builder
	for _, s := range segs {
		seg := s.(map[string]any)
		data, _ := seg["data"].(map[string]any)
		if seg["type"] != "text" {
			b.WriteString("[CQ:" + seg["type"].(string) + "]")
			continue
		}
		text, _ := data["text"].(string)
		b.WriteString(strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;").Replace(text))
	}
	return b.String()
}

func newSink(t *testing.T, b *fakeBot, tok string, opts ...onebot.Option) *onebot.Sink {
	t.Helper()
	opts = append([]onebot.Option{onebot.WithEgress(egress.Options{AllowPrivate: true}), onebot.WithRobot(robot.WithClock(func() time.Time { return t0 }))}, opts...)
	s, err := onebot.New(b.URL, tok, onebot.Target{GroupID: group}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: onebot.Kind, Name: "qq-class"} }

// hostile is an item whose title holds Chinese text, an ampersand, an
// HTML tag and a CQ code that would mention everyone in the group.
func hostile() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: "期末考试 & <b>安排</b> [CQ:at,qq=all]", URL: "https://jw.example.edu.cn/notice/1?a=1&b=2", Change: delivery.ChangeNew},
	}}
}

// TestCQCodeInTitleNeverReachesTheWireAsACQCode: the message goes as one
// text segment (literal by the protocol), never as a CQ string, so
// [CQ:at,qq=all] in a title stays text; Chinese, & and <b> arrive intact
// with the link.
func TestCQCodeInTitleNeverReachesTheWireAsACQCode(t *testing.T) {
	b := newBot(t, nil)
	out := newSink(t, b, token).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile(), Lang: "zh", Zone: time.UTC})
	deliverytest.Outcome(t, out, delivery.Completed, "")
	if out.ProviderID != "1804289383" {
		t.Errorf("provider id %q", out.ProviderID)
	}
	calls := b.Calls()
	if len(calls) != 1 {
		t.Fatalf("bot got %d calls", len(calls))
	}
	c := calls[0]
	if c.Path != "/send_group_msg" || c.Body["group_id"] != float64(group) || c.Body["user_id"] != nil {
		t.Errorf("call %s %v", c.Path, c.Body)
	}
	if _, set := c.Body["auto_escape"]; set {
		t.Errorf("auto_escape sent with a segment array: %s", c.Raw)
	}
	segs := c.Body["message"].([]any)
	if len(segs) != 1 || segs[0].(map[string]any)["type"] != "text" {
		t.Fatalf("message %s", c.Raw)
	}
	cq := cqString(t, c.Body["message"])
	if strings.Contains(cq, "[CQ:") {
		t.Errorf("a CQ code reached the wire: %s", cq)
	}
	text := segs[0].(map[string]any)["data"].(map[string]any)["text"].(string)
	for _, want := range []string{"期末考试 & <b>安排</b> [CQ:at,qq=all]", "https://jw.example.edu.cn/notice/1?a=1&b=2", "课程通知"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if !bytes.Contains(c.Raw, []byte("<b>")) {
		t.Errorf("the body escapes HTML it need not: %s", c.Raw)
	}
}

// TestPrivateMessageGoesToTheUser: a user_id target calls send_private_msg.
func TestPrivateMessageGoesToTheUser(t *testing.T) {
	b := newBot(t, nil)
	s, err := onebot.New(b.URL+"/", token, onebot.Target{UserID: 10001}, onebot.WithEgress(egress.Options{AllowPrivate: true}))
	if err != nil {
		t.Fatal(err)
	}
	deliverytest.Outcome(t, s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()}), delivery.Completed, "")
	if c := b.Calls()[0]; c.Path != "/send_private_msg" || c.Body["user_id"] != float64(10001) || c.Body["group_id"] != nil {
		t.Errorf("call %s %v", c.Path, c.Body)
	}
}

// TestClassify: each answer of the API ends in its class.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name        string
		a           answer
		tok         string
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{"ok", answer{Status: "ok"}, token, delivery.Completed, "", false},
		{"token missing", answer{}, "", delivery.Failed, "bad_token", true},
		{"token wrong", answer{}, "wrong-token-value", delivery.Failed, "bad_token", true},
		{"async", answer{Status: "async", Retcode: 1}, token, delivery.Unknown, "async", false},
		{"send failed", answer{Status: "failed", Retcode: 100}, token, delivery.Failed, "code_100", false},
		{"logged out", answer{Status: "failed", Retcode: 104}, token, delivery.Failed, "logged_out", true},
		{"unknown action", answer{Status: "failed", Retcode: 404}, token, delivery.Failed, "unknown_action", true},
		{"worker pool", answer{Status: "failed", Retcode: 201}, token, delivery.RetryAfter, "not_ready", false},
		{"handler exception", answer{Status: "failed", Retcode: 200}, token, delivery.Unknown, "code_200", false},
		{"too many", answer{HTTP: 429}, token, delivery.RetryAfter, "rate_limited", false},
		{"server error", answer{HTTP: 502}, token, delivery.Unknown, "http_502", false},
		{"bad body", answer{HTTP: 400}, token, delivery.Failed, "http_400", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBot(t, func(int) answer { return tc.a })
			out := newSink(t, b, tc.tok).Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
			deliverytest.Outcome(t, out, tc.result, tc.reason)
			if out.Unreachable != tc.unreachable {
				t.Errorf("unreachable %v", out.Unreachable)
			}
		})
	}
	// An HTTP 200 that is not a OneBot answer is never taken for success.
	for _, raw := range []string{`{"status":"ok"}`, `NapCat4 Is Running`, `{"status":"failed","retcode":0}`} {
		if out := onebot.Classify(200, []byte(raw)); out.Result != delivery.Unknown {
			t.Errorf("%s: %v", raw, out.Result)
		}
	}
}

// TestI3_WrongTokenFailsOnceAndMarksUnreachable: a 403 ends the push
// failed after one attempt and tells the owner.
func TestI3_WrongTokenFailsOnceAndMarksUnreachable(t *testing.T) {
	b := newBot(t, nil)
	r := robottest.NewRig(t, t0)
	var mu sync.Mutex
	var marked []string
	r.Start("qq-class", onebot.Kind, newSink(t, b, "wrong-token-value"), func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			marked = append(marked, recipient+" "+reason)
			mu.Unlock()
		}
	})
	fx := r.Settled(r.Queue(hostile()), store.Failed)
	if fx.Error != "bad_token" || len(fx.Attempts) != 1 || len(b.Calls()) != 1 {
		t.Fatalf("error %q after %d attempts, %d calls", fx.Error, len(fx.Attempts), len(b.Calls()))
	}
	robottest.Wait(t, "the unreachable mark", func() bool { mu.Lock(); defer mu.Unlock(); return len(marked) == 1 })
	if marked[0] != "qq-class bad_token" {
		t.Errorf("marked %v", marked)
	}
}

// TestI3_DroppedConnectionIsUnknownAndNeverSentAgain: the API read the
// request and the connection dropped: unknown, no second message.
func TestI3_DroppedConnectionIsUnknownAndNeverSentAgain(t *testing.T) {
	b := newBot(t, func(int) answer { return answer{Drop: true} })
	r := robottest.NewRig(t, t0)
	r.Start("qq-class", onebot.Kind, newSink(t, b, token), nil)
	k := r.Queue(hostile())
	if fx := r.Settled(k, store.Unknown); fx.Error != delivery.ReasonConnLost {
		t.Errorf("error %q", fx.Error)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond)
	if n := len(b.Calls()); n != 1 {
		t.Fatalf("bot got %d calls, want 1", n)
	}
}

// TestI3_TimeoutAfterSendingIsUnknown: an answer slower than the attempt's
// timeout may still have been sent: unknown.
func TestI3_TimeoutAfterSendingIsUnknown(t *testing.T) {
	b := newBot(t, func(int) answer { return answer{Status: "ok", Sleep: 300 * time.Millisecond} })
	s := newSink(t, b, token, onebot.WithEgress(egress.Options{AllowPrivate: true, Timeout: 50 * time.Millisecond}))
	out := s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
	deliverytest.Outcome(t, out, delivery.Unknown, delivery.ReasonTimeout)
}

// TestI3_TooFastIsDeliveredOnceAfterTheWait: a 429 sent nothing; the push
// waits and then arrives once.
func TestI3_TooFastIsDeliveredOnceAfterTheWait(t *testing.T) {
	b := newBot(t, func(n int) answer {
		if n == 0 {
			return answer{HTTP: 429}
		}
		return answer{Status: "ok"}
	})
	r := robottest.NewRig(t, t0)
	r.Start("qq-class", onebot.Kind, newSink(t, b, token, onebot.WithRobot(robot.WithClock(r.Clock.Now))), nil)
	k := r.Queue(hostile())
	if fx := r.Settled(k, store.Pending); fx.Error != "rate_limited" || !fx.NotBefore.Equal(t0.Add(onebot.TooFastWait)) {
		t.Fatalf("after 429: %q, next %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(onebot.TooFastWait)
	r.Settled(k, store.Completed)
	if n := len(b.Calls()); n != 2 {
		t.Fatalf("bot got %d calls", n)
	}
}

// TestRate_PacedLikeARobotAcrossReplicas: two replicas on one store share
// the API's bucket: of 30 sends at one instant only the burst goes out;
// the rest wait, nothing sent.
func TestRate_PacedLikeARobotAcrossReplicas(t *testing.T) {
	b := newBot(t, nil)
	st := robottest.NewRig(t, t0).Store
	x := newSink(t, b, token, onebot.WithRobot(robot.WithBuckets(st.Buckets())))
	y := newSink(t, b, token, onebot.WithRobot(robot.WithBuckets(st.Buckets())))
	sent, paced := 0, 0
	for i := range 30 {
		s := x
		if i%2 == 1 {
			s = y
		}
		out := s.Send(context.Background(), delivery.Delivery{To: to(), Message: hostile()})
		switch {
		case out.Result == delivery.Completed:
			sent++
		case out.Result == delivery.RetryAfter && out.Reason == "paced" && out.After >= robot.Every:
			paced++
		default:
			t.Fatalf("send %d: %+v", i, out)
		}
	}
	if sent != robot.Burst || paced != 30-robot.Burst || len(b.Calls()) != robot.Burst {
		t.Fatalf("sent %d, paced %d, bot got %d; want %d sent", sent, paced, len(b.Calls()), robot.Burst)
	}
}

// TestSplit_LongTextByCharacters: a long Chinese text goes in parts of
// at most MaxText characters, each valid UTF-8, losing nothing.
func TestSplit_LongTextByCharacters(t *testing.T) {
	text := strings.Repeat("通知：明天上午九点在图书馆三楼召开全体会议，请准时参加。\n", 300)
	parts := onebot.Split(text, onebot.MaxText)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if utf8.RuneCountInString(p) > onebot.MaxText || !utf8.ValidString(p) {
			t.Errorf("part %d: %d characters", i, utf8.RuneCountInString(p))
		}
	}
	if strings.Join(parts, "\n") != strings.TrimRight(text, "\n") {
		t.Errorf("the parts do not add up to the text")
	}
	long := strings.Repeat("长", 2*onebot.MaxText+5)
	if p := onebot.Split(long, onebot.MaxText); len(p) != 3 || strings.Join(p, "") != long {
		t.Errorf("one long line: %d parts", len(p))
	}
}

// TestI10_TokenAndIDsNeverInLogsErrorsOrMetrics: refused and dropped
// attempts are logged and counted without the token or the group.
func TestI10_TokenAndIDsNeverInLogsErrorsOrMetrics(t *testing.T) {
	b := newBot(t, func(n int) answer { return answer{Drop: n == 0, Status: "failed", Retcode: 104} })
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("qq-class", onebot.Kind, newSink(t, b, token, onebot.WithRobot(robot.WithLogger(log))), func(o *delivery.Options) {
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
	secrets := []string{token, "734291856"}
	if !strings.Contains(logs.String(), `"error"`) {
		t.Fatalf("the dropped connection was not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, secrets...)
	for _, s := range secrets {
		if strings.Contains(metrics.String(), s) {
			t.Errorf("metrics carry %q", s)
		}
		for _, k := range []string{lost, refused} {
			if fx := r.Effect(k); strings.Contains(fx.Error, s) {
				t.Errorf("ledger error %q", fx.Error)
			}
		}
	}
	_, err = delivery.BuildSink(&onebot.Config{URL: "ftp://qq.example/" + token, AccessToken: token, GroupID: group}, delivery.SinkDeps{Name: "qq-class"})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("constructor error %v", err)
	}
}

// TestCheckConfig_OneBotShapeWithLineNumbers: each problem of an onebot
// section is reported at its line; a good section loads.
func TestCheckConfig_OneBotShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-url.onebot: url is required`,
		`testdata/bad.yaml:5: recipients.both.onebot: set exactly one of group_id and user_id`,
		`testdata/bad.yaml:7: recipients.neither.onebot: set exactly one of group_id and user_id`,
		`testdata/bad.yaml:9: recipients.plain-http.onebot.url: must use https`,
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
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return token, k == "ONEBOT_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Recipients["qq-class"].Sink()
	if c, ok := sc.(*onebot.Config); !ok || c.AccessToken != token || c.GroupID != 123456789 {
		t.Fatalf("qq-class has sink %#v", sc)
	}
}
