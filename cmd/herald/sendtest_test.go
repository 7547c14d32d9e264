package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/robot/robottest"
	"github.com/herald-bridge/herald/store"
)

// TestSendTest_ReportsTheReceiversAnswerAtOnce: send-test prints the
// class and reason of the first answer as soon as the receiver gives it,
// exits non-zero for anything but completed, and sends one push each
// time — a refused push is not sent again, an unknown one neither, and
// one provably not sent only later, as its retry.
func TestSendTest_ReportsTheReceiversAnswerAtOnce(t *testing.T) {
	badKey := robottest.NewRobot(t, func(int, robottest.Request) robottest.Answer { return robottest.Answer{Code: 93000} })
	var gone, broken atomic.Int32
	hook := func(n *atomic.Int32, status int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	goneSrv, brokenSrv := hook(&gone, http.StatusGone), hook(&broken, http.StatusInternalServerError)
	dead := "http://" + freeAddr(t) // nothing listens there
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	cfg := adjustExample(t, freeAddr(t), map[string]string{
		"recipients:\n": "recipients:\n" +
			"  wecom-bad-key:\n    wecom_bot: {url: \"" + badKey.URL + "/cgi-bin/webhook/send?key=" + wecomKey + "\"}\n" +
			"  wecom-dead:\n    wecom_bot: {url: \"" + dead + "/cgi-bin/webhook/send?key=" + wecomKey + "\"}\n" +
			"  hook-gone:\n    webhook: {url: \"" + goneSrv.URL + "/hook\", secret: \"" + secret + "\"}\n" +
			"  hook-broken:\n    webhook: {url: \"" + brokenSrv.URL + "/hook\", secret: \"" + secret + "\", idempotent: false}\n",
	})
	p, dataDir := startServe(t, cfg)

	// A robot whose key is gone and a webhook answering 410 are disabled
	// by the first test push (SPEC §21): the second is refused unsent.
	cases := []struct {
		recipient, outcome, reason string
		retry                      bool
		again                      string // the second push's reason, when it differs
	}{
		{"wecom-bad-key", "failed", "bad_key", false, delivery.ReasonDisabled},
		{"hook-gone", "failed", "gone", false, delivery.ReasonDisabled},
		{"hook-broken", "unknown", "http_500", false, ""},
		{"wecom-dead", "retry_after", "connect_failed", true, ""},
	}
	for _, c := range cases {
		t.Run(c.recipient, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := run(t, "send-test", c.recipient, "--data-dir", dataDir)
			took := time.Since(start)
			if code != exitFailure {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailure, out, errOut)
			}
			if took > 5*time.Second {
				t.Errorf("send-test took %v to report the answer", took)
			}
			if want := c.recipient + ": " + c.outcome; !strings.HasPrefix(out, want) || !strings.Contains(out, "("+c.reason+")") {
				t.Errorf("stdout %q, want %q with (%s)", out, want, c.reason)
			}
			var v sendTestView
			jout, _, _ := run(t, "send-test", c.recipient, "--json", "--data-dir", dataDir)
			if err := json.Unmarshal([]byte(jout), &v); err != nil {
				t.Fatalf("--json: %v\n%s", err, jout)
			}
			reason, attempts := c.reason, 1
			if c.again != "" {
				reason, attempts = c.again, 0
			}
			if v.Outcome != c.outcome || v.Reason != reason || v.Attempts != attempts || (v.RetryIn > 0) != c.retry {
				t.Errorf("--json = %+v", v)
			}
		})
	}
	// Two send-tests each: one push each, none sent again; the second to
	// a disabled recipient not sent at all.
	time.Sleep(500 * time.Millisecond)
	if n := len(badKey.Requests()); n != 1 {
		t.Errorf("the robot refusing the key got %d requests, want 1", n)
	}
	if gone.Load() != 1 || broken.Load() != 2 {
		t.Errorf("webhooks got %d (410) and %d (500) requests, want 1 and 2", gone.Load(), broken.Load())
	}
	for _, s := range []string{wecomKey, secret} {
		if strings.Contains(p.log.String(), s) {
			t.Errorf("serve log carries a secret %q", s[:6])
		}
	}
}

// TestSendTest_OutcomeOfTheLedgerEntry: how a test push's effect reads
// while it waits and once the receiver answered.
func TestSendTest_OutcomeOfTheLedgerEntry(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ended := []store.Attempt{{N: 1, Start: now.Add(-time.Second), End: now, Outcome: store.Pending}}
	cases := []struct {
		name     string
		fx       store.Effect
		dedups   bool
		outcome  string
		reason   string
		answered bool
		retryIn  float64
	}{
		{"queued", store.Effect{State: store.Pending}, false, "pending", "not_started", false, 0},
		{"in flight", store.Effect{State: store.Pending, InFlight: true, Attempts: []store.Attempt{{N: 1, Start: now}}}, false, "unknown", "no_answer_yet", false, 0},
		{"refused unsent", store.Effect{State: store.Pending, Attempts: ended, Error: "connect_failed", NotBefore: now.Add(30 * time.Second)}, false, "retry_after", "connect_failed", true, 30},
		{"rate limited, receiver drops repeats", store.Effect{State: store.Pending, Attempts: ended, Error: "rate_limited", NotBefore: now.Add(7 * time.Second)}, true, "retry_after", "rate_limited", true, 7},
		{"unknown, replayed under its key", store.Effect{State: store.Pending, Attempts: ended, Error: "timeout", NotBefore: now.Add(time.Second)}, true, "unknown", "timeout", true, 1},
		{"between parts", store.Effect{State: store.Pending, Attempts: ended, PartsSent: 1}, false, "unknown", "no_answer_yet", false, 0},
		{"failed", store.Effect{State: store.Failed, Attempts: ended, Error: "bad_key"}, false, "failed", "bad_key", true, 0},
		{"unknown", store.Effect{State: store.Unknown, Attempts: ended, Error: "http_502"}, false, "unknown", "http_502", true, 0},
		{"completed", store.Effect{State: store.Completed, Attempts: ended}, false, "completed", "", true, 0},
	}
	for _, c := range cases {
		v, answered := testOutcome(c.fx, c.dedups, now)
		if v.Outcome != c.outcome || v.Reason != c.reason || answered != c.answered || v.RetryIn != c.retryIn {
			t.Errorf("%s: %s (%s) answered %v retry in %v; want %s (%s) %v %v", c.name, v.Outcome, v.Reason, answered, v.RetryIn, c.outcome, c.reason, c.answered, c.retryIn)
		}
	}
}
