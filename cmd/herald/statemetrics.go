package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// stateMetrics are gauges an admin alerts on, read from the service's
// state at scrape time (at most once per stateMetricsTTL): each chat
// channel's state (a revoked Telegram token reads "unauthorized"), failing
// tasks by error class, requests waiting for approval, queued pushes and
// the oldest one's age, and recipients marked unreachable. Labels are
// closed sets — channel names, states, error classes — never an address,
// URL or task name (I10).
type stateMetrics struct {
	s  *service
	mu sync.Mutex
	at time.Time
	st stateSnapshot
}

// stateMetricsTTL bounds how often a scrape reads the catalog and the queue.
const stateMetricsTTL = 15 * time.Second

// queueScan bounds how many queued pushes one reading looks at.
const queueScan = 10000

type stateSnapshot struct {
	channels    map[string]string
	failing     map[string]int // class → tasks
	pending     int
	queued      int
	oldest      time.Duration
	unreachable int
}

var (
	descChannel     = prometheus.NewDesc("herald_channel_state", "1 for each chat channel's current state (on, polling, webhook, starting, unauthorized, off, …).", []string{"channel", "state"}, nil)
	descFailing     = prometheus.NewDesc("herald_tasks_failing", "Tasks whose last check failed, by error class.", []string{"class"}, nil)
	descPending     = prometheus.NewDesc("herald_requests_pending", "Requests waiting for an admin's approval.", nil, nil)
	descQueued      = prometheus.NewDesc("herald_pushes_queued", "Pushes claimed and waiting to be sent (counted up to 10000).", nil, nil)
	descOldest      = prometheus.NewDesc("herald_push_oldest_pending_seconds", "Age of the oldest queued push, from its claim; 0 when none waits.", nil, nil)
	descUnreachable = prometheus.NewDesc("herald_recipients_unreachable", "Recipients marked unreachable (a 403, a gone webhook) on live tasks.", nil, nil)
)

func (m *stateMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descChannel, descFailing, descPending, descQueued, descOldest, descUnreachable} {
		ch <- d
	}
}

func (m *stateMetrics) Collect(ch chan<- prometheus.Metric) {
	st := m.snapshot()
	for name, state := range st.channels {
		ch <- prometheus.MustNewConstMetric(descChannel, prometheus.GaugeValue, 1, name, state)
	}
	for class, n := range st.failing {
		ch <- prometheus.MustNewConstMetric(descFailing, prometheus.GaugeValue, float64(n), class)
	}
	ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(st.pending))
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(st.queued))
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, st.oldest.Seconds())
	ch <- prometheus.MustNewConstMetric(descUnreachable, prometheus.GaugeValue, float64(st.unreachable))
}

// snapshot reads the state, or returns the last reading while it is fresh.
func (m *stateMetrics) snapshot() stateSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if !m.at.IsZero() && now.Sub(m.at) < stateMetricsTTL {
		return m.st
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := stateSnapshot{failing: map[string]int{}}
	if m.s.channels != nil {
		st.channels = m.s.channels.status()
	}
	if m.s.manager != nil {
		unreachable := map[string]bool{}
		_ = eachTask(ctx, m.s.manager, func(t *tasks.Task) {
			switch {
			case t.State == tasks.PendingApproval:
				st.pending++
			case t.State == tasks.Errored || (t.State == tasks.Active && (t.Failures > 0 || t.LastOutcome == tasks.OutcomeFailed)):
				st.failing[failingClass(t.LastError)]++
			}
			for _, r := range t.Unreachable {
				unreachable[r] = true
			}
		})
		st.unreachable = len(unreachable)
	}
	if m.s.store != nil {
		if fxs, err := m.s.store.Ledger().Due(ctx, now.Add(365*24*time.Hour), queueScan); err == nil {
			st.queued = len(fxs)
			for _, fx := range fxs {
				st.oldest = max(st.oldest, now.Sub(fx.CreatedAt))
			}
		}
	}
	m.at, m.st = now, st
	return st
}

// classes are the error classes a failing task is counted under; anything
// else is "other", so the label stays a closed set.
var classes = []watch.Class{watch.Transient, watch.Auth, watch.Permission, watch.Schema, watch.Cancelled,
	watch.TooLarge, watch.BlockedAddress, watch.NotFound, watch.Scope}

func failingClass(c string) string {
	if slices.Contains(classes, watch.Class(c)) {
		return c
	}
	return "other"
}
