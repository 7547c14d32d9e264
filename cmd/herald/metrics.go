package main

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	hook "github.com/herald-bridge/herald/webhook"
)

// serviceMetrics are the service's Prometheus series beyond the
// dispatcher's (docs/operations.md, Metrics). Every label is one of a
// small closed set — a source kind, an outcome, a status class, a refusal
// reason, a ledger state — never a recipient, URL, token or task name
// (I10).
type serviceMetrics struct {
	runs       *prometheus.CounterVec   // kind, outcome
	runSeconds *prometheus.HistogramVec // kind
	fetches    *prometheus.CounterVec   // status class
	fetchBytes prometheus.Counter
	// documents: source documents asked for, by whether the source sent
	// the document (full) or answered 304 Not Modified to the validators
	// herald sent (not_modified); full and notModified count the same.
	documents         *prometheus.CounterVec
	full, notModified atomic.Uint64
	inbound           *prometheus.CounterVec // result, reason
	effects           *prometheus.CounterVec // state
	inboxDropped      *prometheus.CounterVec // read
}

func newServiceMetrics(reg prometheus.Registerer) *serviceMetrics {
	m := &serviceMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_task_runs_total",
			Help: "Task runs by source kind and outcome."}, []string{"kind", "outcome"}),
		runSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "herald_task_run_seconds",
			Help: "Duration of task runs, fetch to commit, by source kind.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, []string{"kind"}),
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_fetches_total",
			Help: "Source HTTP requests by status class (2xx, 3xx, 4xx, 5xx; error: no answer)."}, []string{"class"}),
		fetchBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_fetch_bytes_total",
			Help: "Bytes of source documents read (after decompression)."}),
		documents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_fetch_documents_total",
			Help: "Source documents answered, by answer: full (sent whole) or not_modified (304 to a conditional GET)."}, []string{"answer"}),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_inbound_events_total",
			Help: "Inbound webhook events: accepted, duplicate, or refused (by reason)."}, []string{"result", "reason"}),
		effects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_ledger_effects_total",
			Help: "Ledger effects entering a state: pending (claimed, or queued again), completed, failed, unknown."}, []string{"state"}),
		inboxDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_inbox_dropped_total",
			Help: "Inbox items dropped by policy.limits.inbox_items, by whether they had been read."}, []string{"read"}),
	}
	reg.MustRegister(m.runs, m.runSeconds, m.fetches, m.fetchBytes, m.inbound, m.effects, m.inboxDropped, buildInfo())
	reg.MustRegister(m.documents, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_fetch_not_modified_ratio",
		Help: "Share of source documents answered 304 Not Modified since the start (0 to 1)."},
		func() float64 { return m.conditional().Share }))
	return m
}

// registerInboundStats exports the inbound routes' load: requests
// refused for load by reason (client_busy: 429, one client over its
// share; busy and body_budget: 503), whether inbound is shedding now, and
// what is open and held.
func registerInboundStats(reg prometheus.Registerer, stats func() hook.InboundStats) {
	refused := func(reason string, n func(hook.InboundStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "herald_inbound_shed_total",
			Help:        "Requests to /hooks/*, /telegram/webhook and /feishu/events refused for load, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 { return float64(n(stats())) })
	}
	reg.MustRegister(
		refused(hook.ErrClientBusy.Code, func(s hook.InboundStats) uint64 { return s.RefusedClient }),
		refused(hook.ErrBusy.Code, func(s hook.InboundStats) uint64 { return s.RefusedBusy }),
		refused(hook.ErrBodyBudget.Code, func(s hook.InboundStats) uint64 { return s.RefusedBudget }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_inbound_shedding",
			Help: "1 while the inbound routes refused requests for load within the last 10 seconds."},
			func() float64 {
				if stats().Shedding {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_inbound_in_flight",
			Help: "Inbound requests open now."}, func() float64 { return float64(stats().InFlight) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_inbound_unauthenticated_bytes",
			Help: "Bytes of inbound bodies counted against the budget for bodies not yet authenticated."},
			func() float64 { return float64(stats().PendingBytes) }),
	)
}

// inboxDrop counts what an inbox's cap dropped.
func (m *serviceMetrics) inboxDrop(read, unread int) {
	m.inboxDropped.WithLabelValues("true").Add(float64(read))
	m.inboxDropped.WithLabelValues("false").Add(float64(unread))
}

// run counts one recorded task run.
func (m *serviceMetrics) run(kind string, r tasks.RunRecord) {
	if kind == "" {
		kind = "detect"
	}
	m.runs.WithLabelValues(kind, r.Outcome).Inc()
	m.runSeconds.WithLabelValues(kind).Observe(r.Duration.Seconds())
}

// fetch counts one source request: its status (0: no answer) and the
// bytes of the document read.
func (m *serviceMetrics) fetch(status int, bytes int) {
	class := "error"
	if status >= 100 && status < 600 {
		class = strconv.Itoa(status/100) + "xx"
	}
	m.fetches.WithLabelValues(class).Inc()
	m.fetchBytes.Add(float64(bytes))
	switch {
	case status == http.StatusNotModified:
		m.notModified.Add(1)
		m.documents.WithLabelValues("not_modified").Inc()
	case status >= 200 && status < 300:
		m.full.Add(1)
		m.documents.WithLabelValues("full").Inc()
	}
}

// conditionalView is what conditional GET saves, in `herald status`.
type conditionalView struct {
	Documents   uint64  `json:"documents"`    // source documents answered since the start
	NotModified uint64  `json:"not_modified"` // of them, 304 Not Modified
	Share       float64 `json:"not_modified_share"`
}

// conditional is the share of source documents answered 304.
func (m *serviceMetrics) conditional() conditionalView {
	full, nm := m.full.Load(), m.notModified.Load()
	v := conditionalView{Documents: full + nm, NotModified: nm}
	if v.Documents > 0 {
		v.Share = float64(nm) / float64(v.Documents)
	}
	return v
}

// countingAdmitter counts inbound events accepted and duplicate.
type countingAdmitter struct {
	hook.Admitter
	m *serviceMetrics
}

func (a countingAdmitter) Admit(ctx context.Context, ad delivery.Admission) (store.CommitResult, error) {
	res, err := a.Admitter.Admit(ctx, ad)
	if err == nil {
		if len(res.Claimed) > 0 {
			a.m.inbound.WithLabelValues("accepted", "").Inc()
		} else {
			a.m.inbound.WithLabelValues("duplicate", "").Inc()
		}
	}
	return res, err
}

// countRefused wraps the inbound hook handler: a refused event is counted
// by the error code it is answered with.
func (m *serviceMetrics) countRefused(next func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		err := next(w, r)
		if err != nil {
			reason := "error"
			var he *hook.Error
			if errors.As(err, &he) {
				reason = he.Code
			}
			m.inbound.WithLabelValues("refused", reason).Inc()
		}
		return err
	}
}

// countingStore counts the ledger's state changes (herald_ledger_effects_total).
type countingStore struct {
	store.Store
	l countingLedger
}

func (s countingStore) Ledger() store.Ledger { return s.l }

func countLedger(st store.Store, m *serviceMetrics) store.Store {
	return countingStore{Store: st, l: countingLedger{Ledger: st.Ledger(), m: m}}
}

type countingLedger struct {
	store.Ledger
	m *serviceMetrics
}

func (l countingLedger) state(s store.EffectState, n int) {
	if n > 0 {
		l.m.effects.WithLabelValues(string(s)).Add(float64(n))
	}
}

func (l countingLedger) Commit(ctx context.Context, c store.RunCommit) (store.CommitResult, error) {
	res, err := l.Ledger.Commit(ctx, c)
	if err == nil {
		l.state(store.Pending, len(res.Claimed))
	}
	return res, err
}

func (l countingLedger) Settle(ctx context.Context, key string, o store.Outcome, now time.Time) (store.Effect, error) {
	fx, err := l.Ledger.Settle(ctx, key, o, now)
	if err == nil {
		l.state(o.State, 1)
	}
	return fx, err
}

func (l countingLedger) Expire(ctx context.Context, key, reason string, now time.Time) (store.Effect, error) {
	fx, err := l.Ledger.Expire(ctx, key, reason, now)
	if err == nil {
		l.state(store.Failed, 1)
	}
	return fx, err
}

func (l countingLedger) Redeliver(ctx context.Context, key, who string, now time.Time) (store.Effect, error) {
	fx, err := l.Ledger.Redeliver(ctx, key, who, now)
	if err == nil {
		l.state(store.Pending, 1)
	}
	return fx, err
}

func (l countingLedger) Recover(ctx context.Context, r store.Recovery, now time.Time) ([]store.Effect, error) {
	fxs, err := l.Ledger.Recover(ctx, r, now)
	for _, fx := range fxs {
		l.state(fx.State, 1)
	}
	return fxs, err
}
