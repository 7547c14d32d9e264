package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/webhook/signature"
)

var update = flag.Bool("update", false, "rewrite golden files")

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var testNow = time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC)

// received is one request as the fake receiver saw it.
type received struct {
	Header http.Header
	Body   []byte
}

// receiver is a fake webhook endpoint that records what reaches it.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func newReceiver(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rv := &receiver{}
	rv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rv.mu.Lock()
		rv.reqs = append(rv.reqs, received{Header: r.Header.Clone(), Body: body})
		rv.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(rv.Close)
	return rv
}

func (rv *receiver) requests() []received {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]received(nil), rv.reqs...)
}

func status(code int, hdr ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(code)
	}
}

// newTestSink builds a sink for url with private networks allowed (the
// fakes listen on loopback) and a fixed clock.
func newTestSink(t *testing.T, url string, o egress.Options) *Sink {
	t.Helper()
	o.AllowPrivate = true
	s, err := New("team-hook", url, testSecret, false, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s.now = func() time.Time { return testNow }
	return s
}

func testDelivery() delivery.Delivery {
	return delivery.Delivery{
		Key:     "eff_3f9a1c",
		To:      delivery.Address{Kind: delivery.Webhook, Name: "team-hook"},
		Attempt: 1,
		Message: delivery.Message{
			Kind:       delivery.KindChanged,
			Title:      "CS101 notices changed",
			TaskID:     "t_42",
			TaskName:   "CS101 notices",
			OccurredAt: time.Date(2026, 11, 30, 16, 14, 5, 0, time.FixedZone("CST", 8*3600)),
			Items: []delivery.Item{
				{ID: "n1", Title: "Exam moved <Room 3>", URL: "https://example.edu/n/1?a=1&b=2", Change: delivery.ChangeNew},
				{ID: "n2", Title: "Homework 4", Change: delivery.ChangeDeadline, Due: time.Date(2026, 12, 3, 23, 59, 0, 0, time.UTC)},
				{ID: "n3", Title: "Old notice", Change: delivery.ChangeRemoved},
			},
		},
	}
}

// verifyIndependently checks a Standard Webhooks signature with
// crypto/hmac directly, as a receiver written from the spec would.
func verifyIndependently(t *testing.T, secret string, h http.Header, body []byte) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("decode secret: %v", err)
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		t.Fatalf("missing Standard Webhooks headers: %v", h)
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp %q is not unix seconds", ts)
	}
	if d := testNow.Sub(time.Unix(n, 0)); d < -5*time.Minute || d > 5*time.Minute {
		t.Fatalf("webhook-timestamp %d outside tolerance", n)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, e := range strings.Split(sigs, " ") {
		v, s, _ := strings.Cut(e, ",")
		got, err := base64.StdEncoding.DecodeString(s)
		if v == "v1" && err == nil && hmac.Equal(got, want) {
			return
		}
	}
	t.Fatalf("signature %q does not verify", sigs)
}

func TestSendCompleted(t *testing.T) {
	for _, code := range []int{200, 201, 202, 204} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			rv := newReceiver(t, status(code))
			s := newTestSink(t, rv.URL+"/hook", egress.Options{UserAgent: "herald-test/1"})
			out := s.Send(context.Background(), testDelivery())
			deliverytest.Outcome(t, out, delivery.Completed, "")
			reqs := rv.requests()
			if len(reqs) != 1 {
				t.Fatalf("receiver got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			verifyIndependently(t, testSecret, r.Header, r.Body)
			for h, want := range map[string]string{
				"webhook-id":        "eff_3f9a1c",
				"webhook-timestamp": strconv.FormatInt(testNow.Unix(), 10),
				"content-type":      "application/json",
				"user-agent":        "herald-test/1",
			} {
				if got := r.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
}

// TestI3_WebhookIDStableAcrossAttempts: the id a receiver deduplicates by
// stays the same on every attempt; the timestamp is the attempt's.
func TestI3_WebhookIDStableAcrossAttempts(t *testing.T) {
	rv := newReceiver(t, status(200))
	s := newTestSink(t, rv.URL, egress.Options{})
	d := testDelivery()
	s.Send(context.Background(), d)
	s.now = func() time.Time { return testNow.Add(90 * time.Second) }
	d.Attempt = 2
	s.Send(context.Background(), d)
	reqs := rv.requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests", len(reqs))
	}
	if a, b := reqs[0].Header.Get("webhook-id"), reqs[1].Header.Get("webhook-id"); a != b || a != d.Key {
		t.Errorf("webhook-id changed across attempts: %q, %q", a, b)
	}
	if a, b := reqs[0].Header.Get("webhook-timestamp"), reqs[1].Header.Get("webhook-timestamp"); a == b {
		t.Errorf("webhook-timestamp %q reused across attempts", a)
	}
	if !bytes.Equal(reqs[0].Body, reqs[1].Body) {
		t.Errorf("body differs across attempts:\n%s\n%s", reqs[0].Body, reqs[1].Body)
	}
	for _, r := range reqs {
		verifyIndependently(t, testSecret, r.Header, r.Body)
	}
}

func TestSendClassifiesStatus(t *testing.T) {
	date := testNow.Add(2 * time.Minute).Format(http.TimeFormat)
	tests := []struct {
		name        string
		h           func(http.ResponseWriter, *http.Request)
		want        delivery.Result
		reason      string
		after       time.Duration
		unreachable bool
	}{
		{"400", status(400), delivery.Failed, "http_400", 0, false},
		{"401", status(401), delivery.Failed, "http_401", 0, false},
		{"404", status(404), delivery.Failed, "http_404", 0, false},
		{"410 gone", status(410), delivery.Failed, "gone", 0, true},
		{"408", status(408), delivery.Unknown, "http_408", 0, false},
		{"500", status(500), delivery.Unknown, "http_500", 0, false},
		{"502", status(502), delivery.Unknown, "http_502", 0, false},
		{"503", status(503, "Retry-After", "5"), delivery.Unknown, "http_503", 5 * time.Second, false},
		{"409", status(409), delivery.Unknown, "http_409", 0, false},
		{"425", status(425), delivery.Unknown, "http_425", 0, false},
		{"301", status(301, "Location", "https://example.org/"), delivery.Failed, "redirect", 0, false},
		{"429 seconds", status(429, "Retry-After", "7"), delivery.RetryAfter, "rate_limited", 7 * time.Second, false},
		{"429 http date", status(429, "Retry-After", date), delivery.RetryAfter, "rate_limited", 2 * time.Minute, false},
		{"429 no header", status(429), delivery.RetryAfter, "rate_limited", DefaultRetryAfter, false},
		{"429 garbage", status(429, "Retry-After", "soon"), delivery.RetryAfter, "rate_limited", DefaultRetryAfter, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rv := newReceiver(t, tt.h)
			s := newTestSink(t, rv.URL, egress.Options{})
			out := s.Send(context.Background(), testDelivery())
			deliverytest.Outcome(t, out, tt.want, tt.reason)
			if out.After != tt.after {
				t.Errorf("After = %v, want %v", out.After, tt.after)
			}
			if out.Unreachable != tt.unreachable || out.Gone != tt.unreachable {
				t.Errorf("Unreachable = %v, Gone = %v, want %v (only 410 says the recipient is gone)", out.Unreachable, out.Gone, tt.unreachable)
			}
			if n := len(rv.requests()); n != 1 {
				t.Errorf("receiver got %d requests, want exactly 1 (no retries inside the sink)", n)
			}
			deliverytest.NoSecretInOutcome(t, out, testSecret, strings.TrimPrefix(testSecret, "whsec_"), rv.URL)
		})
	}
}

// TestI3_RateLimitedIsRetryAfterDeliveredOnce: a 429 is reported with its
// wait and the sink does not try again by itself.
func TestI3_RateLimitedIsRetryAfterDeliveredOnce(t *testing.T) {
	rv := newReceiver(t, status(429, "Retry-After", "120"))
	s := newTestSink(t, rv.URL, egress.Options{})
	out := s.Send(context.Background(), testDelivery())
	deliverytest.Outcome(t, out, delivery.RetryAfter, ReasonRateLimited)
	if out.After != 2*time.Minute {
		t.Errorf("After = %v, want 2m", out.After)
	}
	if n := len(rv.requests()); n != 1 {
		t.Errorf("delivered %d times, want 1", n)
	}
}

// TestI3_UnknownWhenConnectionDroppedAfterBody: the receiver read the whole
// request, then the connection died without a response.
func TestI3_UnknownWhenConnectionDroppedAfterBody(t *testing.T) {
	rv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close()
	})
	s := newTestSink(t, rv.URL, egress.Options{})
	out := s.Send(context.Background(), testDelivery())
	deliverytest.Outcome(t, out, delivery.Unknown, ReasonConnLost)
	reqs := rv.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	if len(reqs[0].Body) == 0 {
		t.Fatal("receiver read no body")
	}
	deliverytest.NoSecretInOutcome(t, out, testSecret, rv.URL)
}

// hold is a handler that has read the request and answers only when the
// test ends.
func hold(t *testing.T, got chan<- struct{}) func(http.ResponseWriter, *http.Request) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

// expiring is a context whose deadline the test fires by hand, so the
// "deadline passed after the write" case needs no timer.
type expiring struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiring() *expiring {
	return &expiring{Context: context.Background(), done: make(chan struct{})}
}

func (e *expiring) expire()                     { e.once.Do(func() { close(e.done) }) }
func (e *expiring) Done() <-chan struct{}       { return e.done }
func (e *expiring) Deadline() (time.Time, bool) { return time.Time{}, false }
func (e *expiring) Err() error {
	select {
	case <-e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestI3_UnknownOnDeadlineAfterWrite: the receiver has read the request;
// the attempt's deadline passes before it answers.
func TestI3_UnknownOnDeadlineAfterWrite(t *testing.T) {
	got := make(chan struct{}, 1)
	rv := newReceiver(t, hold(t, got))
	s := newTestSink(t, rv.URL, egress.Options{})
	ctx := newExpiring()
	go func() {
		<-got
		ctx.expire()
	}()
	out := s.Send(ctx, testDelivery())
	deliverytest.Outcome(t, out, delivery.Unknown, ReasonTimeout)
}

// TestI3_UnknownOnTimeoutAfterWrite: the request was written and read; the
// answer never came within the sink's own timeout.
func TestI3_UnknownOnTimeoutAfterWrite(t *testing.T) {
	got := make(chan struct{}, 1)
	rv := newReceiver(t, hold(t, got))
	s := newTestSink(t, rv.URL, egress.Options{Timeout: time.Second})
	out := s.Send(context.Background(), testDelivery())
	deliverytest.Outcome(t, out, delivery.Unknown, ReasonTimeout)
	select {
	case <-got:
	default:
		t.Fatal("receiver never saw the request")
	}
}

// TestI3_UnknownWhenCanceledAfterWrite: cancellation once the receiver has
// the request cannot unsend it.
func TestI3_UnknownWhenCanceledAfterWrite(t *testing.T) {
	got := make(chan struct{}, 1)
	rv := newReceiver(t, hold(t, got))
	s := newTestSink(t, rv.URL, egress.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-got
		cancel()
	}()
	out := s.Send(ctx, testDelivery())
	deliverytest.Outcome(t, out, delivery.Unknown, ReasonCanceled)
}

func TestI3_CanceledBeforeSendIsRetryAfter(t *testing.T) {
	rv := newReceiver(t, status(200))
	s := newTestSink(t, rv.URL, egress.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := s.Send(ctx, testDelivery())
	deliverytest.Outcome(t, out, delivery.RetryAfter, ReasonCanceled)
	if n := len(rv.requests()); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

// TestI3_ConnectionRefusedIsRetryAfter: nothing listens, so nothing was sent.
func TestI3_ConnectionRefusedIsRetryAfter(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	s := newTestSink(t, "http://"+addr+"/hook", egress.Options{})
	out := s.Send(context.Background(), testDelivery())
	deliverytest.Outcome(t, out, delivery.RetryAfter, ReasonConnectFailed)
	if out.After <= 0 {
		t.Errorf("After = %v, want a positive wait", out.After)
	}
	deliverytest.NoSecretInOutcome(t, out, testSecret, addr)
}

func TestRedirectNotFollowed(t *testing.T) {
	target := newReceiver(t, status(200))
	rv := newReceiver(t, status(302, "Location", target.URL+"/elsewhere"))
	s := newTestSink(t, rv.URL, egress.Options{})
	out := s.Send(context.Background(), testDelivery())
	deliverytest.Outcome(t, out, delivery.Failed, ReasonRedirect)
	if n := len(target.requests()); n != 0 {
		t.Fatalf("redirect target got %d requests, want 0", n)
	}
}

// TestSSRF_NewRefusesPrivateDestinations: literal private, loopback and
// link-local (cloud metadata) destinations are refused when the recipient
// is configured, unless private networks are allowed.
func TestSSRF_NewRefusesPrivateDestinations(t *testing.T) {
	for _, u := range []string{
		"https://127.0.0.1/hook",
		"https://10.0.0.5/hook",
		"https://169.254.169.254/latest/meta-data/",
		"https://[::1]/hook",
		"https://localhost/hook",
		"https://[::ffff:127.0.0.1]/hook",
	} {
		t.Run(u, func(t *testing.T) {
			_, err := New("team-hook", u, testSecret, false, egress.Options{})
			if !errors.Is(err, egress.ErrBlocked) || !errors.Is(err, ErrConfig) {
				t.Fatalf("New(%s) = %v, want ErrConfig wrapping egress.ErrBlocked", u, err)
			}
			if strings.Contains(err.Error(), "MfKQ9r8") {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}
}

// TestSSRF_DialGuardRefusesPrivateAddresses: a destination that resolves
// to a private address at send time (DNS rebinding, a name pointing
// inward) is refused at dial time: Failed "blocked_address", nothing sent.
func TestSSRF_DialGuardRefusesPrivateAddresses(t *testing.T) {
	rv := newReceiver(t, status(200))
	_, port, _ := net.SplitHostPort(rv.Listener.Addr().String())
	for _, u := range []string{
		"http://localhost:" + port + "/hook", // resolves to 127.0.0.1 / ::1, where a receiver listens
		"https://localhost/hook",
		"https://127.0.0.1/hook",
		"https://10.0.0.5/hook",
		"https://169.254.169.254/latest/meta-data/",
		"https://[::1]/hook",
	} {
		t.Run(u, func(t *testing.T) {
			s, err := New("team-hook", "https://hooks.example.com/in", testSecret, false, egress.Options{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			s.url = u // as if the public name now resolved inward
			out := s.Send(context.Background(), testDelivery())
			deliverytest.Outcome(t, out, delivery.Failed, ReasonBlocked)
			deliverytest.NoSecretInOutcome(t, out, testSecret, "10.0.0.5", "169.254")
		})
	}
	if n := len(rv.requests()); n != 0 {
		t.Fatalf("loopback receiver got %d requests, want 0", n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name, url, secret string
	}{
		{"empty secret", "https://hooks.example.com/in", ""},
		{"secret not base64", "https://hooks.example.com/in", "whsec_%%%notbase64-s3cretvalue"},
		{"plain http", "http://hooks.example.com/in", testSecret},
		{"credentials in url", "https://user:pa55word@hooks.example.com/in", testSecret},
		{"ftp", "ftp://hooks.example.com/in", testSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New("team-hook", tt.url, tt.secret, false, egress.Options{})
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New = %v, want ErrConfig", err)
			}
			for _, leak := range []string{"s3cretvalue", "pa55word", "MfKQ9r8"} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("error leaks a secret: %v", err)
				}
			}
		})
	}
}

func TestDedups(t *testing.T) {
	for _, idem := range []bool{true, false} {
		s, err := New("team-hook", "https://hooks.example.com/in", testSecret, idem, egress.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Dedups(delivery.Address{Kind: delivery.Webhook, Name: "team-hook"}); got != idem {
			t.Errorf("Dedups = %v, want %v", got, idem)
		}
	}
}

func TestUnsupportedKindNotSent(t *testing.T) {
	rv := newReceiver(t, status(200))
	s := newTestSink(t, rv.URL, egress.Options{})
	d := testDelivery()
	d.Message.Kind = "bogus"
	deliverytest.Outcome(t, s.Send(context.Background(), d), delivery.Failed, ReasonBadKind)
	if n := len(rv.requests()); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

// TestBodyGolden pins the wire body (docs/delivery.md, What a webhook recipient receives) byte for byte.
func TestBodyGolden(t *testing.T) {
	tests := []struct {
		name string
		msg  func() delivery.Message
	}{
		{"changed", func() delivery.Message { return testDelivery().Message }},
		{"test", func() delivery.Message {
			return delivery.Message{Kind: delivery.KindTest, Title: "Test", Text: "Test push from herald", OccurredAt: testNow}
		}},
		{"state_no_time", func() delivery.Message {
			return delivery.Message{Kind: delivery.KindState, TaskID: "t_42", TaskName: "CS101 notices", Text: "paused"}
		}},
		{"changed_was", func() delivery.Message { return wasMessage() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rv := newReceiver(t, status(200))
			s := newTestSink(t, rv.URL, egress.Options{})
			d := testDelivery()
			d.Message = tt.msg()
			deliverytest.Outcome(t, s.Send(context.Background(), d), delivery.Completed, "")
			got := rv.requests()[0].Body
			golden := filepath.Join("testdata", "body_"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
				t.Errorf("body mismatch\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// wasMessage lists changed items that say what they were before, one
// without (a due time in another zone, to show it leaves in UTC).
func wasMessage() delivery.Message {
	m := testDelivery().Message
	m.Items = []delivery.Item{
		{ID: "n1", Title: "Exam — Room 204", URL: "https://example.edu/n/1", Change: delivery.ChangeChanged, WasTitle: "Exam — Room <101>"},
		{ID: "n2", Title: "Homework 4", Change: delivery.ChangeChanged, Due: time.Date(2026, 12, 5, 23, 59, 0, 0, time.UTC),
			WasDue: time.Date(2026, 12, 4, 7, 59, 0, 0, time.FixedZone("CST", 8*3600))},
		{ID: "n3", Title: "Reading list", Change: delivery.ChangeChanged},
	}
	return m
}

// was_title and was_due appear on an item exactly when set; a payload
// stored before they existed encodes byte for byte as before.
func TestBodyWasFields(t *testing.T) {
	b, err := Encode("eff_3f9a1c", wasMessage(), testNow)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"was_title": "Exam — Room <101>"},
		{"was_due": "2026-12-03T23:59:00Z"},
		{},
	}
	for i, it := range body.Items {
		for _, k := range []string{"was_title", "was_due"} {
			got, has := it[k]
			w, wantHas := want[i][k]
			if has != wantHas || got != w {
				t.Errorf("item %d %s = %v (present %v), want %v (present %v)", i, k, got, has, w, wantHas)
			}
		}
	}

	old := `{"kind":"watch.changed","title":"CS101 notices changed","task_id":"t_42","task_name":"CS101 notices","items":[` +
		`{"id":"n1","title":"Exam moved <Room 3>","url":"https://example.edu/n/1?a=1&b=2","change":"new"},` +
		`{"id":"n2","title":"Homework 4","change":"deadline","due":"2026-12-03T23:59:00Z"},` +
		`{"id":"n3","title":"Old notice","change":"removed"}],"occurred_at":"2026-11-30T16:14:05+08:00"}`
	var m delivery.Message
	if err := json.Unmarshal([]byte(old), &m); err != nil {
		t.Fatal(err)
	}
	got, err := Encode("eff_3f9a1c", m, testNow)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "body_changed.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimSuffix(golden, []byte("\n"))) {
		t.Errorf("old payload encodes differently\n got: %s\nwant: %s", got, golden)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", DefaultRetryAfter},
		{"0", 0},
		{"17", 17 * time.Second},
		{" 3 ", 3 * time.Second},
		{"-5", DefaultRetryAfter},
		{"1.5", DefaultRetryAfter},
		{testNow.Add(time.Hour).Format(http.TimeFormat), time.Hour},
		{testNow.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"tomorrow", DefaultRetryAfter},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.in, testNow); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func BenchmarkEncodeAndSign(b *testing.B) {
	s, err := New("team-hook", "https://hooks.example.com/in", testSecret, false, egress.Options{})
	if err != nil {
		b.Fatal(err)
	}
	d := testDelivery()
	b.ReportAllocs()
	for b.Loop() {
		body, err := Encode(d.Key, d.Message, testNow)
		if err != nil {
			b.Fatal(err)
		}
		_ = signature.Sign(s.key, d.Key, testNow, body)
	}
}
