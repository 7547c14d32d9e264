package dingtalkbot_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
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
	"github.com/herald-bridge/herald/delivery/dingtalkbot"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/redis"
)

const (
	token  = "5d1f9a3c7e2b4d6f8a0c2e4a6c8e0a2c4e6a8c0e2a4c6e8a0c2e4a6c8e0a2c4e"
	secret = "SECb1c9e07d4a6f2e8b3c5d7a9f1e3b5c7d9a1f3e5b7c9d1f3a5e7b9c1d3f5a7e9b1"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func hookOf(rb *robottest.Robot) string { return rb.URL + "/robot/send?access_token=" + token }

func newSink(t *testing.T, rb *robottest.Robot, sec string, opts ...dingtalkbot.Option) *dingtalkbot.Sink {
	t.Helper()
	opts = append([]dingtalkbot.Option{dingtalkbot.WithEgress(egress.Options{AllowPrivate: true}), dingtalkbot.WithClock(func() time.Time { return t0 })}, opts...)
	s, err := dingtalkbot.New(hookOf(rb), sec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func to() delivery.Address { return delivery.Address{Kind: dingtalkbot.Kind, Name: "ding-team"} }

func zhNews() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskName: "课程通知", OccurredAt: t0, Items: []delivery.Item{
		{ID: "1", Title: "期末考试安排：204 教室", URL: "https://jw.example.edu.cn/notice/1", Change: delivery.ChangeNew},
		{ID: "2", Title: "作业二截止时间调整", Change: delivery.ChangeChanged},
	}}
}

func markdown(r robottest.Request) (title, text string) {
	md, _ := r.Body["markdown"].(map[string]any)
	title, _ = md["title"].(string)
	text, _ = md["text"].(string)
	return title, text
}

// signatureProblem checks a request's signature the way the platform
// does, computed here from the documented recipe: base64 of
// HMAC-SHA256 keyed by the secret over timestamp + "\n" + secret, the
// timestamp in milliseconds within an hour of now.
func signatureProblem(r robottest.Request, now time.Time) string {
	ts, sign := r.Query.Get("timestamp"), r.Query.Get("sign")
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "timestamp " + strconv.Quote(ts) + " is not a number"
	}
	if d := now.Sub(time.UnixMilli(ms)); d < -time.Hour || d > time.Hour {
		return "timestamp " + ts + " is more than an hour off"
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); sign != want {
		return "sign " + strconv.Quote(sign) + ", want " + strconv.Quote(want)
	}
	if r.Query.Get("access_token") != token {
		return "access token missing"
	}
	return ""
}

// TestSign_EachAttemptSignedAfreshAndVerifiable: the robot verifies the
// signature of every attempt; a retry carries its own timestamp.
func TestSign_EachAttemptSignedAfreshAndVerifiable(t *testing.T) {
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	rb := robottest.NewRobot(t, func(_ int, r robottest.Request) robottest.Answer {
		if p := signatureProblem(r, clock()); p != "" {
			t.Errorf("signature: %s", p)
			return robottest.Answer{Code: 310000}
		}
		return robottest.Answer{}
	})
	s := newSink(t, rb, secret, dingtalkbot.WithClock(clock))
	for range 2 {
		deliverytest.Outcome(t, s.Send(context.Background(), delivery.Delivery{To: to(), Message: zhNews(), Lang: "zh"}), delivery.Completed, "")
		mu.Lock()
		now = now.Add(1500 * time.Millisecond)
		mu.Unlock()
	}
	got := rb.Requests()
	if len(got) != 2 || got[0].Query.Get("timestamp") == got[1].Query.Get("timestamp") || got[0].Query.Get("sign") == got[1].Query.Get("sign") {
		t.Fatalf("two attempts share a signature: %v / %v", got[0].Query, got[1].Query)
	}
	if got[0].Query.Get("timestamp") != strconv.FormatInt(t0.UnixMilli(), 10) {
		t.Errorf("timestamp %s, want ms %d", got[0].Query.Get("timestamp"), t0.UnixMilli())
	}
	// Without a secret nothing is added to the URL.
	plain := robottest.NewRobot(t, nil)
	newSink(t, plain, "").Send(context.Background(), delivery.Delivery{To: to(), Message: zhNews(), Lang: "zh"})
	if q := plain.Requests()[0].Query; q.Has("sign") || q.Has("timestamp") {
		t.Errorf("unsigned robot got %v", q)
	}
}

// TestSend_ChineseMarkdownWithTitleRoundTrip: the markdown message has a
// title and arrives with every character intact, lines broken the way
// DingTalk renders them.
func TestSend_ChineseMarkdownWithTitleRoundTrip(t *testing.T) {
	rb := robottest.NewRobot(t, nil)
	out := newSink(t, rb, secret).Send(context.Background(), delivery.Delivery{To: to(), Message: zhNews(), Lang: "zh", Zone: time.UTC})
	deliverytest.Outcome(t, out, delivery.Completed, "")
	got := rb.Requests()
	if len(got) != 1 || got[0].Body["msgtype"] != "markdown" {
		t.Fatalf("robot got %+v", got)
	}
	title, text := markdown(got[0])
	if title != "课程通知 有 2 项更新" {
		t.Errorf("title %q", title)
	}
	want := "**课程通知 有 2 项更新**  \n  \n- [新] [期末考试安排：204 教室](https://jw.example.edu.cn/notice/1)  \n- [更新] 作业二截止时间调整"
	if text != want {
		t.Errorf("text\n%q\nwant\n%q", text, want)
	}
}

// TestSplit_LongNoticeInPartsUnderTheBodyLimit: every part's body fits
// the 20000-byte limit, is valid UTF-8 and is titled with its place.
func TestSplit_LongNoticeInPartsUnderTheBodyLimit(t *testing.T) {
	text := strings.Repeat("通知：明天上午九点在图书馆三楼召开全体会议，请准时参加。\"引号\"", 500)
	msg := delivery.Message{Kind: delivery.KindInbound, Title: "会议通知", Text: text, OccurredAt: t0}
	rb := robottest.NewRobot(t, nil)
	r := robottest.NewRig(t, t0)
	r.Start("ding-team", dingtalkbot.Kind, newSink(t, rb, secret), nil)
	fx := r.Settled(r.Queue(msg), store.Completed)
	got := rb.Requests()
	if len(got) < 3 || fx.PartsSent != len(got) {
		t.Fatalf("%d messages, %d parts sent", len(got), fx.PartsSent)
	}
	joined := ""
	for i, req := range got {
		title, md := markdown(req)
		if len(req.Raw) > dingtalkbot.MaxBody || !utf8.ValidString(md) {
			t.Errorf("part %d: body %d bytes, valid %v", i, len(req.Raw), utf8.ValidString(md))
		}
		if want := "会议通知 (" + strconv.Itoa(i+1) + "/" + strconv.Itoa(len(got)) + ")"; title != want {
			t.Errorf("part %d title %q, want %q", i, title, want)
		}
		joined += strings.TrimPrefix(md, "**会议通知**  \n  \n")
	}
	if joined != text {
		t.Error("the parts do not add up to the text")
	}
}

// TestI3_TooFastIsDeliveredOnceAfterTheWait: errcode 130101 sent
// nothing; the push waits and then arrives once, signed afresh.
func TestI3_TooFastIsDeliveredOnceAfterTheWait(t *testing.T) {
	r := robottest.NewRig(t, t0)
	rb := robottest.NewRobot(t, func(n int, req robottest.Request) robottest.Answer {
		if p := signatureProblem(req, r.Clock.Now()); p != "" {
			t.Errorf("attempt %d: %s", n, p)
		}
		if n == 0 {
			return robottest.Answer{Code: 130101}
		}
		return robottest.Answer{}
	})
	r.Start("ding-team", dingtalkbot.Kind, newSink(t, rb, secret, dingtalkbot.WithClock(r.Clock.Now)), nil)
	k := r.Queue(zhNews())
	if fx := r.Settled(k, store.Pending); fx.Error != "rate_limited" || !fx.NotBefore.Equal(t0.Add(robot.TooFastWait)) {
		t.Fatalf("after 130101: error %q, next attempt %v", fx.Error, fx.NotBefore)
	}
	r.Clock.Advance(robot.TooFastWait)
	r.Settled(k, store.Completed)
	got := rb.Requests()
	if len(got) != 2 || got[0].Query.Get("timestamp") == got[1].Query.Get("timestamp") {
		t.Fatalf("robot got %d requests (want 2, each with its own timestamp)", len(got))
	}
}

// TestI3_DroppedConnectionIsUnknownAndNeverSentAgain: no second message.
func TestI3_DroppedConnectionIsUnknownAndNeverSentAgain(t *testing.T) {
	rb := robottest.NewRobot(t, func(int, robottest.Request) robottest.Answer { return robottest.Answer{Drop: true} })
	r := robottest.NewRig(t, t0)
	r.Start("ding-team", dingtalkbot.Kind, newSink(t, rb, secret, dingtalkbot.WithClock(r.Clock.Now)), nil)
	k := r.Queue(zhNews())
	r.Settled(k, store.Unknown)
	r.Clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond)
	if got := rb.Requests(); len(got) != 1 {
		t.Fatalf("robot got %d messages, want 1", len(got))
	}
}

// TestWrongSignatureOrTokenFailsAfterOneAttemptAndMarksUnreachable.
func TestWrongSignatureOrTokenFailsAfterOneAttemptAndMarksUnreachable(t *testing.T) {
	for code, reason := range map[int]string{310000: "bad_signature", 300001: "bad_token"} {
		rb := robottest.NewRobot(t, func(int, robottest.Request) robottest.Answer { return robottest.Answer{Code: code} })
		r := robottest.NewRig(t, t0)
		var mu sync.Mutex
		var marked []string
		r.Start("ding-team", dingtalkbot.Kind, newSink(t, rb, "SECwrong"), func(o *delivery.Options) {
			o.Hooks.Unreachable = func(_ context.Context, _, recipient, why string) {
				mu.Lock()
				marked = append(marked, recipient+" "+why)
				mu.Unlock()
			}
		})
		fx := r.Settled(r.Queue(zhNews()), store.Failed)
		if fx.Error != reason || len(fx.Attempts) != 1 || len(rb.Requests()) != 1 {
			t.Errorf("errcode %d: error %q after %d attempts, %d requests", code, fx.Error, len(fx.Attempts), len(rb.Requests()))
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
		if len(marked) != 1 || marked[0] != "ding-team "+reason {
			t.Errorf("errcode %d: unreachable marks %v", code, marked)
		}
		mu.Unlock()
	}
}

// TestRate_SharedBucketAcrossReplicasOnRedis: three replicas on one Redis
// send to one robot; together they get one robot's allowance, not three.
func TestRate_SharedBucketAcrossReplicasOnRedis(t *testing.T) {
	url := os.Getenv("HERALD_TEST_REDIS_URL")
	if url == "" {
		t.Skip("HERALD_TEST_REDIS_URL not set")
	}
	rb := robottest.NewRobot(t, nil)
	prefix := "herald-test:dingtalkbot:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	var sinks []*dingtalkbot.Sink
	for range 3 {
		st, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sinks = append(sinks, newSink(t, rb, secret, dingtalkbot.WithBuckets(st.Buckets())))
	}
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sinks[i%3].Send(context.Background(), delivery.Delivery{To: to(), Message: zhNews(), Lang: "zh"})
		}()
	}
	wg.Wait()
	if n := len(rb.Requests()); n != robot.Burst {
		t.Fatalf("three replicas sent %d messages at one instant, want one robot's burst of %d", n, robot.Burst)
	}
}

// TestI10_TokenAndSecretNeverInLogsErrorsOrMetrics.
func TestI10_TokenAndSecretNeverInLogsErrorsOrMetrics(t *testing.T) {
	rb := robottest.NewRobot(t, func(n int, _ robottest.Request) robottest.Answer {
		return robottest.Answer{Drop: n == 0, Code: 310000}
	})
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()
	r := robottest.NewRig(t, t0)
	r.Start("ding-team", dingtalkbot.Kind, newSink(t, rb, secret, dingtalkbot.WithLogger(log)), func(o *delivery.Options) {
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
	sign := rb.Requests()[0].Query.Get("sign")
	secrets := []string{token, secret, hookOf(rb), sign}
	if !strings.Contains(logs.String(), `"error"`) {
		t.Fatalf("the dropped connection was not logged:\n%s", logs)
	}
	deliverytest.NoSecretInLogs(t, logs, secrets...)
	for _, s := range secrets {
		if strings.Contains(metrics.String(), s) {
			t.Errorf("metrics carry %q", s)
		}
	}
	_, err = delivery.BuildSink(&dingtalkbot.Config{URL: "ftp://oapi.example/robot/send?access_token=" + token, Secret: secret}, delivery.SinkDeps{Name: "ding-team"})
	if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), secret) {
		t.Errorf("constructor error %v", err)
	}
}

// TestCheckConfig_DingTalkShapeWithLineNumbers.
func TestCheckConfig_DingTalkShapeWithLineNumbers(t *testing.T) {
	_, err := configs.LoadEnv(filepath.Join("testdata", "bad.yaml"), func(string) (string, bool) { return "", false })
	var ce *configs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error, got %v", err)
	}
	want := []string{
		`testdata/bad.yaml:3: recipients.no-url.dingtalk_bot: url is required`,
		`testdata/bad.yaml:5: recipients.no-token.dingtalk_bot.url: must carry the robot's access token`,
		`testdata/bad.yaml:7: recipients.pre-signed.dingtalk_bot.url: must not carry timestamp or sign`,
		`testdata/bad.yaml:9: recipients.bad-secret.dingtalk_bot.secret: must be the robot's signing secret, which starts with SEC`,
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
	for _, leak := range []string{"5d1f9a3c7e2b4d6f8a0c", "SECb1c9e07d"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("config errors carry %q:\n%v", leak, err)
		}
	}
	env := map[string]string{"DING_TOKEN": token, "DING_SECRET": secret}
	cfg, err := configs.LoadEnv(filepath.Join("testdata", "good.yaml"), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ding-team", "ding-unsigned"} {
		if sc := cfg.Recipients[name].Sink(); sc == nil || sc.Kind() != dingtalkbot.Kind {
			t.Errorf("%s has sink %v", name, sc)
		}
	}
}
