package wecombot_test

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/herald-bridge/herald/delivery/wecombot"
	"github.com/herald-bridge/herald/store"
)

const key = "7f3c9a2e-51d4-4b8e-9c1a-d2e6f0a8b3c5"

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func hookOf(rb *robottest.Robot) string { return rb.URL + "/cgi-bin/webhook/send?key=" + key }

func newSink(t *testing.T, rb *robottest.Robot, opts ...wecombot.Option) *wecombot.Sink {
	t.Helper()
	opts = append([]wecombot.Option{wecombot.WithEgress(egress.Options{AllowPrivate: true}), wecombot.WithClock(func() time.Time { return t0 })}, opts...)
	s, err := wecombot.New(hookOf(rb), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: wecombot.Kind, Name: "wecom-team"} }

func zhNews() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: "期末考试安排：204 教室", URL: "https://jw.example.edu.cn/notice/1", Change: delivery.ChangeNew},
		{ID: "2", Title: "作业二截止时间调整", Change: delivery.ChangeChanged, Due: t0.Add(26 * time.Hour)},
	}}
}

func content(r robottest.Request) string {
	md, _ := r.Body["markdown"].(map[string]any)
	s, _ := md["content"].(string)
	return s
}

// TestSend_ChineseMarkdownRoundTrip: a Chinese message arrives as one
// markdown body, every character intact.
func TestSend_ChineseMarkdownRoundTrip(t *testing.T) {
	rb := robottest.NewRobot(t, nil)
	out := newSink(t, rb).Send(context.Background(), delivery.Delivery{To: to(), Message: zhNews(), Lang: "zh", Zone: time.UTC})
	deliverytest.Outcome(t, out, delivery.Completed, "")
	got := rb.Requests()
	if len(got) != 1 || got[0].Body["msgtype"] != "markdown" {
		t.Fatalf("robot got %+v", got)
	}
	c := content(got[0])
	for _, want := range []string{"**课程通知 有 2 项更新**", "- [新] [期末考试安排：204 教室](https://jw.example.edu.cn/notice/1)", "作业二截止时间调整", "还剩 1 天 2 小时"} {
		if !strings.Contains(c, want) {
			t.Errorf("content lacks %q:\n%s", want, c)
		}
	}
	if got[0].Query.Get("key") != key {
		t.Errorf("key not sent: %v", got[0].Query)
	}
}

// TestSplit_ByUTF8BytesNeverInsideACharacter: a long Chinese notice goes
// in parts of at most 4096 bytes, each valid UTF-8, losing nothing; the
// dispatcher sends every part once.
func TestSplit_ByUTF8BytesNeverInsideACharacter(t *testing.T) {
	text := strings.Repeat("通知：明天上午九点在图书馆三楼召开全体会议，请准时参加。", 120) // one line, ~10 KB
	msg := delivery.Message{Kind: delivery.KindInbound, Title: "会议通知", Text: text, OccurredAt: t0}
	rb := robottest.NewRobot(t, nil)
	sink := newSink(t, rb)
	parts := sink.Parts(delivery.Delivery{Message: msg, Lang: "zh"})
	if len(parts) < 3 {
		t.Fatalf("%d parts for %d bytes", len(parts), len(text))
	}
	joined := ""
	for i, p := range parts {
		if len(p) > wecombot.MaxContent || !utf8.ValidString(p) {
			t.Errorf("part %d: %d bytes, valid UTF-8 %v", i, len(p), utf8.ValidString(p))
		}
		joined += strings.TrimPrefix(p, "**会议通知**\n\n")
	}
	if joined != text {
		t.Errorf("the parts do not add up to the text")
	}

	r := robottest.NewRig(t, t0)
	r.Start("wecom-team", wecombot.Kind, sink, nil)
	fx := r.Settled(r.Queue(msg), store.Completed)
	if got := rb.Requests(); len(got) != len(parts) || fx.PartsSent != len(parts) {
		t.Fatalf("robot got %d messages, ledger %d parts, want %d", len(got), fx.PartsSent, len(parts))
	}
	for i, req := range rb.Requests() {
		if content(req) != parts[i] {
			t.Errorf("message %d differs from part %d", i, i)
		}
	}
}

// TestI3_TooFastIsDeliveredOnceAfterTheWait: errcode 45009 sent nothing;
// the push waits a minute and then arrives once.
func TestI3_TooFastIsDeliveredOnceAfterTheWait(t *testing.T) {
	rb := robottest.NewRobot(t, func(n int, _ robottest.Request) robottest.Answer {
		if n == 0 {
			return robottest.Answer{Code: 45009}
		}
		return robottest.Answer{}
	})
	r := robottest.NewRig(t, t0)
	r.Start("wecom-team", wecombot.Kind, newSink(t, rb, wecombot.WithClock(r.Clock.Now)), nil)
	k := r.Queue(zhNews())
	fx := r.Settled(k, store.Pending)
	if fx.Error != "rate_limited" || !fx.NotBefore.Equal(t0.Add(robot.TooFastWait)) {
		t.Fatalf("after 45009: error %q, next attempt %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(robot.TooFastWait)
	r.Settled(k, store.Completed)
	if got := rb.Requests(); len(got) != 2 {
		t.Fatalf("robot got %d requests, want the refused one and the delivered one", len(got))
	}
}

// TestI3_DroppedConnectionIsUnknownAndNeverSentAgain: the robot read the
// message and the connection dropped: unknown, no second message.
func TestI3_DroppedConnectionIsUnknownAndNeverSentAgain(t *testing.T) {
	rb := robottest.NewRobot(t, func(int, robottest.Request) robottest.Answer { return robottest.Answer{Drop: true} })
	r := robottest.NewRig(t, t0)
	r.Start("wecom-team", wecombot.Kind, newSink(t, rb, wecombot.WithClock(r.Clock.Now)), nil)
	k := r.Queue(zhNews())
	if fx := r.Settled(k, store.Unknown); fx.Error != delivery.ReasonConnLost {
		t.Errorf("error %q, want %s", fx.Error, delivery.ReasonConnLost)
	}
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond) // polls of the dispatcher, which must find nothing to send
	if got := rb.Requests(); len(got) != 1 {
		t.Fatalf("robot got %d messages, want 1", len(got))
	}
}

// TestWrongKeyFailsAfterOneAttemptAndMarksUnreachable: errcode 93000 ends
// the push failed at once and tells the owner the robot is unreachable.
func TestWrongKeyFailsAfterOneAttemptAndMarksUnreachable(t *testing.T) {
	rb := robottest.NewRobot(t, func(int, robottest.Request) robottest.Answer { return robottest.Answer{Code: 93000} })
	r := robottest.NewRig(t, t0)
	var mu sync.Mutex
	var marked []string
	r.Start("wecom-team", wecombot.Kind, newSink(t, rb), func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			marked = append(marked, recipient+" "+reason)
			mu.Unlock()
		}
	})
	fx := r.Settled(r.Queue(zhNews()), store.Failed)
	if fx.Error != "bad_key" || len(fx.Attempts) != 1 || len(rb.Requests()) != 1 {
		t.Fatalf("error %q after %d attempts, %d requests", fx.Error, len(fx.Attempts), len(rb.Requests()))
	}
	// The hook runs just after the outcome is recorded.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(marked)
		mu.Unlock()
		if n > 0 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(marked) != 1 || marked[0] != "wecom-team bad_key" {
		t.Errorf("unreachable marks %v", marked)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		code        int
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{0, delivery.Completed, "", false},
		{45009, delivery.RetryAfter, "rate_limited", false},
		{93000, delivery.Failed, "bad_key", true},
		{40008, delivery.Failed, "bad_key", true},
		{40035, delivery.Failed, "code_40035", false},
	} {
		rb := robottest.NewRobot(t, func(int, robottest.Request) robottest.Answer { return robottest.Answer{Code: tc.code} })
		out := newSink(t, rb).Send(context.Background(), delivery.Delivery{To: to(), Message: zhNews(), Lang: "zh"})
		deliverytest.Outcome(t, out, tc.result, tc.reason)
		if out.Unreachable != tc.unreachable {
			t.Errorf("errcode %d: unreachable %v", tc.code, out.Unreachable)
		}
		// 93000: the robot's key was reset or the robot removed; it is
		// disabled (SPEC §21) until enabled again.
		if out.Gone != (tc.code == 93000) {
			t.Errorf("errcode %d: gone %v", tc.code, out.Gone)
		}
	}
}

// TestRate_OneBucketPerRobotAcrossReplicas: two sinks on one store (two
// replicas) share the robot's bucket: of 30 sends at one instant only the
// bucket's burst goes out; the rest wait, nothing sent.
func TestRate_OneBucketPerRobotAcrossReplicas(t *testing.T) {
	rb := robottest.NewRobot(t, nil)
	st := robottest.NewRig(t, t0).Store
	a := newSink(t, rb, wecombot.WithBuckets(st.Buckets()))
	b := newSink(t, rb, wecombot.WithBuckets(st.Buckets()))
	sent, paced := 0, 0
	for i := range 30 {
		s := a
		if i%2 == 1 {
			s = b
		}
		out := s.Send(context.Background(), delivery.Delivery{To: to(), Message: zhNews(), Lang: "zh"})
		switch {
		case out.Result == delivery.Completed:
			sent++
		case out.Result == delivery.RetryAfter && out.Reason == "paced" && out.After >= robot.Every:
			paced++
		default:
			t.Fatalf("send %d: %+v", i, out)
		}
	}
	if sent != robot.Burst || paced != 30-robot.Burst || len(rb.Requests()) != robot.Burst {
		t.Fatalf("sent %d, paced %d, robot got %d; want %d sent", sent, paced, len(rb.Requests()), robot.Burst)
	}
}

// TestI10_RobotKeyNeverInLogsErrorsOrMetrics: a dropped connection and a
// refused key are logged and counted without the key or the hook URL.
func TestI10_RobotKeyNeverInLogsErrorsOrMetrics(t *testing.T) {
	rb := robottest.NewRobot(t, func(n int, _ robottest.Request) robottest.Answer {
		return robottest.Answer{Drop: n == 0, Code: 93000}
	})
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("wecom-team", wecombot.Kind, newSink(t, rb, wecombot.WithLogger(log)), func(o *delivery.Options) {
		o.Log, o.Metrics = log, delivery.NewMetrics(reg)
	})
	lost := r.Queue(zhNews())
	r.Settled(lost, store.Unknown)
	refused := r.Queue(zhNews())
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
	secrets := []string{key, hookOf(rb), "key=" + key}
	if !strings.Contains(logs.String(), `"error"`) {
		t.Fatalf("the dropped connection was not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, secrets...)
	for _, s := range secrets {
		if strings.Contains(metrics.String(), s) {
			t.Errorf("metrics carry %q", s)
		}
	}
	if !strings.Contains(metrics.String(), `kind="wecom_bot",result="unknown"`) {
		t.Errorf("metrics lack the robot's attempts:\n%s", metrics.String())
	}
	for _, k := range []string{lost, refused} {
		if fx := r.Effect(k); strings.Contains(fx.Error, key) {
			t.Errorf("ledger error %q carries the key", fx.Error)
		}
	}
	_, err = delivery.BuildSink(&wecombot.Config{URL: "ftp://qyapi.example/cgi-bin/webhook/send?key=" + key}, delivery.SinkDeps{Name: "wecom-team"})
	if err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("constructor error %v", err)
	}
}

// TestCheckConfig_WeComShapeWithLineNumbers: every problem of a wecom_bot
// section is reported at its line, none quoting the key.
func TestCheckConfig_WeComShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-url.wecom_bot: url is required`,
		`testdata/bad.yaml:5: recipients.no-key.wecom_bot.url: must carry the robot's key`,
		`testdata/bad.yaml:7: recipients.plain-http.wecom_bot.url: must use https`,
		`testdata/bad.yaml:9: unknown key "secret" in recipients.unknown-key.wecom_bot`,
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
	if strings.Contains(err.Error(), key) {
		t.Errorf("config errors carry the key:\n%v", err)
	}
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { return key, k == "WECOM_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.Recipients["wecom-team"].Sink(); sc == nil || sc.Kind() != wecombot.Kind {
		t.Fatalf("wecom-team has sink %v", sc)
	}
}
