package feishubot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/delivery/egress"
)

const (
	hookToken = "2b7c6a1e-hook-t0ken-secret"
	secret    = "sig-s3cret-abc"
)

var clock = time.Unix(1764464400, 0)

func TestSignVector(t *testing.T) {
	if got := Sign("1599360473", "abc"); got != "cgtpJzI2j6bUDggbdGYjskCK3FPgKpTkwosfWsMzKqM=" {
		t.Errorf("Sign = %q", got)
	}
}

// fakeHook speaks the custom bot wire format: POST /open-apis/bot/v2/hook/<token>,
// signature checked against secret, JSON answers.
type fakeHook struct {
	mu     sync.Mutex
	bodies []map[string]json.RawMessage
	answer func() (status int, body string, hijack bool)
}

func (f *fakeHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/open-apis/bot/v2/hook/"+hookToken {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"code":19001,"msg":"param invalid: incoming webhook access token invalid"}`)
		return
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	var ts, sign string
	_ = json.Unmarshal(body["timestamp"], &ts)
	_ = json.Unmarshal(body["sign"], &sign)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if ts != "1764464400" || sign != Sign(ts, secret) {
		fmt.Fprint(w, `{"code":19021,"data":{},"msg":"sign match fail or timestamp is not within one hour from current time"}`)
		return
	}
	status, ans, hijack := 200, `{"code":0,"data":{},"msg":"success"}`, false
	if f.answer != nil {
		status, ans, hijack = f.answer()
	}
	if hijack {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	}
	w.WriteHeader(status)
	fmt.Fprint(w, ans)
}

func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

var bot = delivery.Address{Kind: delivery.FeishuBot, Name: "ops-group"}

func TestI3_Classification(t *testing.T) {
	ok := func(status int, body string) func() (int, string, bool) {
		return func() (int, string, bool) { return status, body, false }
	}
	cases := []struct {
		name    string
		answer  func() (int, string, bool)
		secret  string
		refused bool
		want    delivery.Result
		reason  string
	}{
		{name: "completed", want: delivery.Completed},
		{name: "completed old form", answer: ok(200, `{"Extra":null,"StatusCode":0,"StatusMessage":"success"}`), want: delivery.Completed},
		{name: "bad signature", secret: "wrong", want: delivery.Failed, reason: "bad_signature"},
		{name: "keyword missing", answer: ok(200, `{"code":19024,"msg":"Key Words Not Found"}`), want: delivery.Failed, reason: "code_19024"},
		{name: "throttled 11232", answer: ok(200, `{"code":11232,"msg":"frequency limited psm"}`), want: delivery.RetryAfter, reason: "rate_limited"},
		{name: "throttled 9499", answer: ok(200, `{"code":9499,"msg":"too many request"}`), want: delivery.RetryAfter, reason: "rate_limited"},
		{name: "429 honoured", answer: ok(429, `{"code":99991400,"msg":"request trigger frequency limit"}`), want: delivery.RetryAfter, reason: "rate_limited"},
		{name: "502", answer: ok(502, `<html>bad gateway</html>`), want: delivery.Unknown, reason: "http_502"},
		{name: "not json", answer: ok(200, `ok`), want: delivery.Unknown, reason: "bad_response"},
		{name: "dropped after request", answer: func() (int, string, bool) { return 0, "", true }, want: delivery.Unknown, reason: "connection_lost"},
		{name: "connection refused", refused: true, want: delivery.RetryAfter, reason: "connect_failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := refusedURL(t)
			if !c.refused {
				srv := httptest.NewServer(&fakeHook{answer: c.answer})
				t.Cleanup(srv.Close)
				base = srv.URL
			}
			sec := secret
			if c.secret != "" {
				sec = c.secret
			}
			log, logs := deliverytest.Logger()
			hook := base + "/open-apis/bot/v2/hook/" + hookToken
			s, err := New(hook, sec, WithLogger(log), WithClock(func() time.Time { return clock }), WithEgress(egress.Options{AllowPrivate: true}))
			if err != nil {
				t.Fatal(err)
			}
			got := s.Send(context.Background(), delivery.Delivery{Key: "k", To: bot, Message: delivery.Message{Kind: delivery.KindTest, Title: "hello"}, Lang: "en"})
			deliverytest.Outcome(t, got, c.want, c.reason)
			if c.want == delivery.RetryAfter && got.After <= 0 {
				t.Errorf("retry_after without a wait")
			}
			deliverytest.NoSecretInOutcome(t, got, hookToken, sec)
			deliverytest.NoSecretInLogs(t, logs, hookToken, sec)
		})
	}
}

func TestPostsSignedCard(t *testing.T) {
	f := &fakeHook{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	s, err := New(srv.URL+"/open-apis/bot/v2/hook/"+hookToken, secret, WithClock(func() time.Time { return clock }), WithEgress(egress.Options{AllowPrivate: true}))
	if err != nil {
		t.Fatal(err)
	}
	m := delivery.Message{Kind: delivery.KindChanged, TaskName: "校园新闻", Items: []delivery.Item{{Title: "A", URL: "https://e.com/a", Change: delivery.ChangeNew}}}
	if got := s.Send(context.Background(), delivery.Delivery{To: bot, Message: m, Lang: "zh"}); got.Result != delivery.Completed {
		t.Fatalf("outcome %+v", got)
	}
	var typ string
	var card struct {
		Header struct {
			Title struct{ Content string }
		}
	}
	_ = json.Unmarshal(f.bodies[0]["msg_type"], &typ)
	if err := json.Unmarshal(f.bodies[0]["card"], &card); err != nil {
		t.Fatalf("card is not an object: %v", err)
	}
	if typ != "interactive" || card.Header.Title.Content != "校园新闻 有 1 项更新" {
		t.Errorf("msg_type %q title %q", typ, card.Header.Title.Content)
	}
}

func TestUnsigned(t *testing.T) {
	var got map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"code":0,"msg":"success","data":{}}`)
	}))
	t.Cleanup(srv.Close)
	s, _ := New(srv.URL+"/hook/x", "", WithEgress(egress.Options{AllowPrivate: true}))
	if o := s.Send(context.Background(), delivery.Delivery{To: bot, Message: delivery.Message{Title: "x"}}); o.Result != delivery.Completed {
		t.Fatalf("%+v", o)
	}
	if _, ok := got["sign"]; ok {
		t.Error("unsigned bot got a sign field")
	}
}

func TestRejects(t *testing.T) {
	if _, err := New("ftp://x/y", ""); !errors.Is(err, ErrBadHook) {
		t.Errorf("New(ftp) = %v", err)
	}
	s, _ := New(refusedURL(t)+"/hook/x", "")
	for _, d := range []delivery.Delivery{
		{To: delivery.Address{Kind: delivery.TelegramChat, ID: "1"}},
		{To: bot, Part: 1},
		{To: bot, Message: delivery.Message{Text: strings.Repeat("x", MaxBody)}},
	} {
		if o := s.Send(context.Background(), d); o.Result != delivery.Failed {
			t.Errorf("%+v: %+v", d.To, o)
		}
	}
}

func FuzzClassify(f *testing.F) {
	f.Add(200, []byte(`{"code":0,"msg":"success"}`))
	f.Add(200, []byte(`{"StatusCode":0}`))
	f.Add(400, []byte(`{"code":19021}`))
	f.Add(503, []byte(`<html>`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		o := classify(status, body)
		if o.Result < delivery.Completed || o.Result > delivery.Unknown {
			t.Fatalf("invalid result %v", o.Result)
		}
		if o.Result == delivery.RetryAfter && o.After <= 0 {
			t.Fatal("retry_after without a wait")
		}
	})
}

func TestGuardRefusesPrivateHook(t *testing.T) {
	f := &fakeHook{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	log, logs := deliverytest.Logger()
	s, err := New(srv.URL+"/open-apis/bot/v2/hook/"+hookToken, secret, WithLogger(log), WithClock(func() time.Time { return clock }))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Send(context.Background(), delivery.Delivery{To: bot, Message: delivery.Message{Title: "x"}})
	deliverytest.Outcome(t, got, delivery.Failed, "blocked_destination")
	if len(f.bodies) != 0 {
		t.Error("a guarded client reached a loopback hook")
	}
	deliverytest.NoSecretInLogs(t, logs, hookToken, secret)
}
