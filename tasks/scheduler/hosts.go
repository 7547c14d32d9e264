package scheduler

import (
	"context"
	"net/url"
	"strings"
	"sync"

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
}

type hostSlot struct {
	runs *slots
	rate *rate.Limiter
}

func newHostGate() *hostGate { return &hostGate{hosts: map[string]*hostSlot{}} }

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
	host := ""
	if u, err := url.Parse(rawURL); err == nil {
		host = strings.ToLower(u.Hostname())
	}
	h := g.slot(host, l)
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
