package delivery_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/webhook"
	"github.com/herald-bridge/herald/store"
)

// answers scripts a receiver: the nth request (1-based) gets codes[n-1],
// any later one 204.
func answers(codes ...int) func(n int, w http.ResponseWriter) bool {
	return func(n int, w http.ResponseWriter) bool {
		if n > len(codes) {
			return true
		}
		w.WriteHeader(codes[n-1])
		return false
	}
}

// always answers every request with code.
func always(code int) func(n int, w http.ResponseWriter) bool {
	return func(_ int, w http.ResponseWriter) bool { w.WriteHeader(code); return false }
}

// TestSpec21_RetriedThreeTimesWithOneIDAndBody: a receiver answering 503,
// 503, then 200 gets exactly three attempts, each signed (the receiver
// verifies every one), under the same webhook-id with byte-identical
// bodies, spaced by the schedule stretched by the jitter (here half the
// 10 % allowed); the push ends completed after one accepted delivery.
func TestSpec21_RetriedThreeTimesWithOneIDAndBody(t *testing.T) {
	schedule := []time.Duration{2 * time.Second, 10 * time.Second}
	r := newRig(t)
	rv := newReceiver(t, answers(http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusOK))
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	r.start(scheduledRoute(t, rv, schedule...), "w", func(o *delivery.Options) { o.Jitter = func() float64 { return 0.5 } })

	at := t0
	for i, wait := range schedule {
		waitFor(t, func() bool { fx := r.effect(key); return len(fx.Attempts) == i+1 && !fx.InFlight }, "attempt %d", i+1)
		fx := r.effect(key)
		want := at.Add(wait + wait/20) // 5 % of jitter
		if fx.State != store.Pending || !fx.NotBefore.Equal(want) {
			t.Fatalf("after attempt %d: %s, next at %s; want pending, next at %s", i+1, fx.State, fx.NotBefore, want)
		}
		r.advance(wait) // the schedule's wait alone is not enough: the jitter comes on top
		if got := len(rv.received()); got != i+1 {
			t.Fatalf("%d requests before the jittered wait ended, want %d", got, i+1)
		}
		r.clock.Advance(wait / 20)
		at = want
	}
	fx := r.settled(key, store.Completed)
	if len(fx.Attempts) != 3 {
		t.Errorf("%d attempts, want 3", len(fx.Attempts))
	}
	r.advance(time.Hour)
	hits := rv.received()
	if len(hits) != 3 {
		t.Fatalf("receiver saw %d requests, want 3", len(hits))
	}
	for i, h := range hits {
		if h.ID != key || !bytes.Equal(h.Body, hits[0].Body) {
			t.Errorf("request %d under %q with body %s; want %q and the first body %s", i+1, h.ID, h.Body, key, hits[0].Body)
		}
	}
}

// TestSpec21_NotIdempotentGetsOneAttempt: a recipient declared
// idempotent: false may act twice on a repeat, so a 503 (which may have
// been acted on) ends the push unknown after one attempt (I3).
func TestSpec21_NotIdempotentGetsOneAttempt(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, always(http.StatusServiceUnavailable))
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	r.start(webhookRoute(t, rv, false), "w", nil)

	fx := r.settled(key, store.Unknown)
	for range 4 {
		r.advance(6 * time.Hour)
	}
	if got := len(rv.received()); got != 1 || len(fx.Attempts) != 1 {
		t.Errorf("receiver saw %d requests, %d attempts; want exactly one", got, len(fx.Attempts))
	}
}

// TestSpec21_FailuresRetriedUntilExhausted: each kind of failure the
// schedule retries (5xx, 408, 409, 425, 429) gets exactly 1 +
// len(schedule) attempts and then ends failed (retries_exhausted); any
// other 4xx ends the push failed at once.
func TestSpec21_FailuresRetriedUntilExhausted(t *testing.T) {
	schedule := []time.Duration{time.Second, 3 * time.Second, 5 * time.Second}
	for _, tc := range []struct {
		code     int
		attempts int
		reason   string
	}{
		{http.StatusServiceUnavailable, 4, delivery.ReasonRetriesExhausted},
		{http.StatusInternalServerError, 4, delivery.ReasonRetriesExhausted},
		{http.StatusRequestTimeout, 4, delivery.ReasonRetriesExhausted},
		{http.StatusConflict, 4, delivery.ReasonRetriesExhausted},
		{http.StatusTooEarly, 4, delivery.ReasonRetriesExhausted},
		{http.StatusTooManyRequests, 4, delivery.ReasonRetriesExhausted},
		{http.StatusBadRequest, 1, "http_400"},
		{http.StatusNotFound, 1, "http_404"},
		{http.StatusUnprocessableEntity, 1, "http_422"},
	} {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			r := newRig(t)
			rv := newReceiver(t, func(_ int, w http.ResponseWriter) bool {
				if tc.code == http.StatusTooManyRequests {
					w.Header().Set("Retry-After", "1")
				}
				w.WriteHeader(tc.code)
				return false
			})
			key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
			r.start(scheduledRoute(t, rv, schedule...), "w", nil)
			for i := range tc.attempts {
				waitFor(t, func() bool { fx := r.effect(key); return len(fx.Attempts) == i+1 && !fx.InFlight }, "attempt %d", i+1)
				r.advance(5 * time.Second)
			}
			fx := r.settled(key, store.Failed)
			if len(fx.Attempts) != tc.attempts || fx.Error != tc.reason {
				t.Errorf("%d attempts, error %q; want %d, %s", len(fx.Attempts), fx.Error, tc.attempts, tc.reason)
			}
			if got := len(rv.received()); got != tc.attempts {
				t.Errorf("receiver saw %d requests, want %d", got, tc.attempts)
			}
		})
	}
}

// TestSpec21_RetryAfterHonouredWhenLater: a 503 asking to wait 30 s is
// retried after 30 s, not the schedule's 1 s; one asking less than the
// schedule waits the schedule.
func TestSpec21_RetryAfterHonouredWhenLater(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		wait       time.Duration
	}{{"30", 30 * time.Second}, {"0", 4 * time.Second}} {
		t.Run(tc.retryAfter, func(t *testing.T) {
			r := newRig(t)
			rv := newReceiver(t, func(n int, w http.ResponseWriter) bool {
				if n > 1 {
					return true
				}
				w.Header().Set("Retry-After", tc.retryAfter)
				w.WriteHeader(http.StatusServiceUnavailable)
				return false
			})
			key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
			r.start(scheduledRoute(t, rv, 4*time.Second), "w", nil)
			waitFor(t, func() bool { fx := r.effect(key); return len(fx.Attempts) == 1 && !fx.InFlight }, "the first attempt")
			if fx := r.effect(key); !fx.NotBefore.Equal(t0.Add(tc.wait)) {
				t.Fatalf("next attempt at %s, want %s", fx.NotBefore, t0.Add(tc.wait))
			}
			r.advance(tc.wait)
			r.settled(key, store.Completed)
		})
	}
}

// disabledHook counts the Disabled hook's calls.
type disabledHook struct {
	mu    sync.Mutex
	calls []delivery.RecipientState
}

func (h *disabledHook) hook(_ context.Context, _, recipient string, st delivery.RecipientState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, st)
}

func (h *disabledHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

// TestSpec21_GoneDisablesUntilEnabled: a 410 disables the recipient and
// tells the Disabled hook once; later pushes end failed
// (recipient_disabled) without an attempt, however many; after Enable a
// new push is delivered.
func TestSpec21_GoneDisablesUntilEnabled(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, answers(http.StatusGone))
	recips := delivery.KVRecipients{KV: r.st.Channels()}
	var hook disabledHook
	r.start(scheduledRoute(t, rv, time.Second), "w", func(o *delivery.Options) {
		o.Recipients, o.Hooks.Disabled = recips, hook.hook
	})

	first := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	if fx := r.settled(first, store.Failed); fx.Error != webhook.ReasonGone || len(fx.Attempts) != 1 {
		t.Fatalf("first push: %d attempts, error %q; want 1, %s", len(fx.Attempts), fx.Error, webhook.ReasonGone)
	}
	st, err := recips.Get(context.Background(), "ops")
	if err != nil || !st.Disabled || st.Reason != webhook.ReasonGone {
		t.Fatalf("recipient state %+v (%v); want disabled, gone", st, err)
	}
	for i := range 3 {
		key := r.admit("hook:ci", "later-"+strconv.Itoa(i), "ops", inbound("deploy"), 0)
		if fx := r.settled(key, store.Failed); fx.Error != delivery.ReasonDisabled || len(fx.Attempts) != 0 {
			t.Errorf("push while disabled: %d attempts, error %q; want none, %s", len(fx.Attempts), fx.Error, delivery.ReasonDisabled)
		}
	}
	if got := len(rv.received()); got != 1 {
		t.Errorf("receiver saw %d requests, want only the one answered 410", got)
	}
	if got := hook.count(); got != 1 {
		t.Errorf("Disabled hook called %d times, want once", got)
	}

	if _, changed, err := recips.Enable(context.Background(), "ops", r.clock.Now()); err != nil || !changed {
		t.Fatalf("enable: changed %t, %v", changed, err)
	}
	key := r.admit("hook:ci", "after-enable", "ops", inbound("deploy"), 0)
	r.settled(key, store.Completed)
	if got := len(rv.received()); got != 2 {
		t.Errorf("receiver saw %d requests, want 2", got)
	}
}

// TestSpec21_DisabledAfterFailingTooLong: a recipient that fails without
// a single success for disable_after is disabled, and told once; a
// success before that keeps it on.
func TestSpec21_DisabledAfterFailingTooLong(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, always(http.StatusServiceUnavailable))
	table := routeTo(webhookSink(t, rv, true).WithPolicy(delivery.RetryPolicy{Schedule: []time.Duration{time.Hour}, DisableAfter: 2 * time.Hour}))
	recips := delivery.KVRecipients{KV: r.st.Channels()}
	var hook disabledHook
	r.start(table, "w", func(o *delivery.Options) { o.Recipients, o.Hooks.Disabled = recips, hook.hook })

	first := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	waitFor(t, func() bool { return !r.effect(first).InFlight && len(r.effect(first).Attempts) == 1 }, "the first attempt")
	r.advance(time.Hour)
	r.settled(first, store.Failed)
	if st, _ := recips.Get(context.Background(), "ops"); st.Disabled || st.Failures != 2 {
		t.Fatalf("after an hour of failing: %+v; want enabled, 2 failures", st)
	}
	r.advance(90 * time.Minute)
	second := r.admit("hook:ci", "d-2", "ops", inbound("deploy"), 0)
	if fx := r.settled(second, store.Failed); fx.Error != delivery.ReasonDisabled || len(fx.Attempts) != 1 {
		t.Errorf("push failing past disable_after: %d attempts, error %q; want 1, %s", len(fx.Attempts), fx.Error, delivery.ReasonDisabled)
	}
	st, _ := recips.Get(context.Background(), "ops")
	if !st.Disabled || st.Reason != delivery.ReasonNoSuccess || hook.count() != 1 {
		t.Errorf("state %+v, %d notices; want disabled (%s), one notice", st, hook.count(), delivery.ReasonNoSuccess)
	}
}

// TestSpec21_MetricsShowWaitingRetriesAndDisabled: the gauges count the
// pushes waiting for a scheduled retry, how long ago the oldest first
// failed, and the disabled recipients; the retry counter has no label
// naming a recipient (I10).
func TestSpec21_MetricsShowWaitingRetriesAndDisabled(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, answers(http.StatusServiceUnavailable, http.StatusGone))
	m := delivery.NewMetrics(nil)
	recips := delivery.KVRecipients{KV: r.st.Channels()}
	r.start(scheduledRoute(t, rv, time.Hour), "w", func(o *delivery.Options) {
		o.Metrics, o.Recipients, o.Observe = m, recips, 5*time.Millisecond
	})
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	waitFor(t, func() bool { fx := r.effect(key); return len(fx.Attempts) == 1 && !fx.InFlight }, "the first attempt")
	r.clock.Advance(20 * time.Minute)
	waitFor(t, func() bool {
		return value(m.RetriesWaiting) == 1 && value(m.OldestRetry) == (20*time.Minute).Seconds()
	}, "one waiting retry, 20 minutes old")
	if got := value(m.Retries.WithLabelValues("webhook", "scheduled")); got != 1 {
		t.Errorf("retries scheduled = %v, want 1", got)
	}
	r.advance(40 * time.Minute) // the retry: 410
	r.settled(key, store.Failed)
	waitFor(t, func() bool {
		return value(m.RetriesWaiting) == 0 && value(m.Disabled) == 1
	}, "no waiting retry and one disabled recipient")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Retries)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() != "kind" && l.GetName() != "outcome" {
					t.Errorf("%s has label %s", f.GetName(), l.GetName())
				}
			}
		}
	}
}

// value reads one gauge or counter as a registry exports it.
func value(c prometheus.Collector) float64 {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || len(families[0].GetMetric()) != 1 {
		return -1
	}
	m := families[0].GetMetric()[0]
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// TestSpec21_TelegramChatThatBlockedTheBotIsDisabled: the one disable
// mechanism serves Telegram too. A chat whose user blocked the bot (403
// "bot was blocked by the user") is disabled after that one answer, told
// once, and the next pushes to it end failed (recipient_disabled) with no
// request to the Bot API; another chat is unaffected.
func TestSpec21_TelegramChatThatBlockedTheBotIsDisabled(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	api.send = func(n int, w http.ResponseWriter) bool {
		if n > 1 {
			return true
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`))
		return false
	}
	recips := delivery.KVRecipients{KV: r.st.Channels()}
	var hook disabledHook
	r.start(telegramRoute(t, api.URL), "w", func(o *delivery.Options) { o.Recipients, o.Hooks.Disabled = recips, hook.hook })

	const blocked, other = "telegram:chat:1001", "telegram:chat:1002"
	first := r.admit("hook:ci", "d-1", blocked, inbound("deploy"), 0)
	if fx := r.settled(first, store.Failed); fx.Error != "blocked" {
		t.Fatalf("first push: error %q, want blocked", fx.Error)
	}
	for i := range 2 {
		key := r.admit("hook:ci", "later-"+strconv.Itoa(i), blocked, inbound("deploy"), 0)
		if fx := r.settled(key, store.Failed); fx.Error != delivery.ReasonDisabled || len(fx.Attempts) != 0 {
			t.Errorf("push to the blocked chat: %d attempts, error %q; want none, %s", len(fx.Attempts), fx.Error, delivery.ReasonDisabled)
		}
	}
	r.settled(r.admit("hook:ci", "d-other", other, inbound("deploy"), 0), store.Completed)
	if got := len(api.sent()); got != 2 || hook.count() != 1 {
		t.Errorf("Bot API got %d messages, %d disable notices; want the refused one and the other chat's, one notice", got, hook.count())
	}
}
