package scheduler

import (
	"context"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/herald-bridge/herald/tasks"
)

// hostGate is the politeness cap per source host (policy.limits.per_host):
// at most PerHostRuns checks of one host at once and PerHostPerMinute
// started per minute, across every task that reads it, so ten thousand
// tasks on one site are checked at the pace the site allows rather than
// all at once.
type hostGate struct {
	mu    sync.Mutex
	hosts map[string]*hostSlot
	// holds are the hosts that asked to be left alone (a 429 or 503 with
	// Retry-After), until when: no check of any task on them starts
	// before then (SPEC §18).
	holds map[string]time.Time
	// names are the host names the plan holds, one copy each.
	names map[string]string
}

type hostSlot struct {
	runs *slots
	rate *rate.Limiter
}

func newHostGate() *hostGate {
	return &hostGate{hosts: map[string]*hostSlot{}, holds: map[string]time.Time{}, names: map[string]string{}}
}

// name is host as one shared copy: a planned check keeps its host's
// name, not the whole source URL it was cut from.
func (g *hostGate) name(host string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n, ok := g.names[host]; ok {
		return n
	}
	n := strings.Clone(host)
	g.names[n] = n
	return n
}

// hostOf is the host a source URL is read from, as the gate keys it.
func hostOf(rawURL string) string { return tasks.SourceHost(rawURL) }

// hold keeps host's checks back until until (the later of two holds).
func (g *hostGate) hold(host string, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until.After(g.holds[host]) {
		g.holds[host] = until
	}
}

// heldUntil reports until when host's checks are held back at now; a
// hold that has passed is forgotten.
func (g *hostGate) heldUntil(host string, now time.Time) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.holds[host]
	if ok && !until.After(now) {
		delete(g.holds, host)
		return time.Time{}, false
	}
	return until, ok
}

// slot returns host's slot, sized by l (a reload resizes it).
func (g *hostGate) slot(host string, l tasks.Limits) *hostSlot {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.hosts[host]
	perSecond := rate.Limit(float64(l.PerHostPerMinute) / 60)
	burst := max(1, (l.PerHostPerMinute+59)/60) // at most one second's worth at once
	if !ok {
		h = &hostSlot{runs: newSlots(l.PerHostRuns), rate: rate.NewLimiter(perSecond, burst)}
		g.hosts[host] = h
		return h
	}
	if h.rate.Limit() != perSecond || h.rate.Burst() != burst {
		h.rate.SetLimit(perSecond)
		h.rate.SetBurst(burst)
	}
	h.runs.resize(l.PerHostRuns)
	return h
}

// enter waits until host may be read once more: a free place among its
// checks at once, then its turn under the rate. It returns the func that
// gives the place back; on ctx's end it waits no longer (I9).
func (g *hostGate) enter(ctx context.Context, rawURL string, l tasks.Limits) (func(), error) {
	h := g.slot(hostOf(rawURL), l)
	if err := h.runs.acquire(ctx); err != nil {
		return nil, err
	}
	// The rate is the site's: measured in wall time whatever the
	// scheduler's clock is.
	if err := h.rate.Wait(ctx); err != nil {
		h.runs.release()
		return nil, err
	}
	return h.runs.release, nil
}

// Hold keeps every check of rawURL's host back until until: the host
// answered 429 or 503 with Retry-After (SPEC §18). Checks already
// planned earlier are planned again when they come due.
func (s *Scheduler) Hold(rawURL string, until time.Time) {
	host := hostOf(rawURL)
	s.hosts.hold(host, until)
	s.log.Info().Str("host", host).Time("until", until).Str("wait", until.Sub(s.clock.Now()).Round(time.Second).String()).
		Msg("source host asked to wait: its checks are held back")
}

// HostHeld reports until when the checks of rawURL's host are held back.
func (s *Scheduler) HostHeld(rawURL string) (time.Time, bool) {
	return s.hosts.heldUntil(hostOf(rawURL), s.clock.Now())
}
