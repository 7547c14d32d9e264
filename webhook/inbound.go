package webhook

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The routes the open internet reaches without an account: inbound hooks
// and the chat platforms' webhooks. They are bounded per client address
// and by a memory budget for bodies not yet authenticated; every other
// route (console, admin API, inbox API, probes, metrics) keeps its own
// share of the listener.
const (
	hooksPrefix     = "/hooks/"
	telegramWebhook = "/telegram/webhook"
	feishuEvents    = "/feishu/events"
)

// inboundPath reports whether path is one of the inbound routes.
func inboundPath(path string) bool {
	return strings.HasPrefix(path, hooksPrefix) || path == telegramWebhook || path == feishuEvents
}

// Defaults and bounds of InboundLimits.
const (
	// MaxInboundBody is the largest body any inbound route reads (I7).
	MaxInboundBody = 1 << 20
	// DefaultPerClient is how many inbound requests one client address
	// may have open at once.
	DefaultPerClient = 16
	// MaxBodyTimeout is the longest an inbound body may take to arrive
	// (and the default).
	MaxBodyTimeout = 10 * time.Second
	// DefaultBodyBudget is the memory, over all clients, that inbound
	// bodies not yet authenticated may hold.
	DefaultBodyBudget = 64 << 20
	// shedWindow is how long after the last refusal for load /readyz and
	// the shedding gauge still say so.
	shedWindow = 10 * time.Second
)

// InboundLimits bound the inbound routes.
type InboundLimits struct {
	// PerClient is how many inbound requests one client address (an IPv4
	// address, an IPv6 /64) may have open at once; the next gets 429.
	PerClient int
	// MaxInFlight is how many inbound requests all clients together may
	// have open; the next gets 503. Default: half of Options.MaxInFlight,
	// so the other routes always keep the other half.
	MaxInFlight int
	// BodyTimeout is how long an inbound request's body may take to
	// arrive, from the end of its headers (at most and by default 10 s).
	BodyTimeout time.Duration
	// BodyBudget is how many bytes inbound bodies not yet authenticated
	// may hold at once, all clients together; a body is counted at its
	// declared length (1 MiB when undeclared) from its first read until it
	// is authenticated or answered. The next gets 503.
	BodyBudget int64
}

func (l *InboundLimits) defaults(maxInFlight int) {
	if l.PerClient <= 0 {
		l.PerClient = DefaultPerClient
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = max(1, maxInFlight/2)
	}
	if l.BodyTimeout <= 0 || l.BodyTimeout > MaxBodyTimeout {
		l.BodyTimeout = MaxBodyTimeout
	}
	if l.BodyBudget <= 0 {
		l.BodyBudget = DefaultBodyBudget
	}
}

// InboundStats is the inbound routes' load, for /readyz and metrics.
type InboundStats struct {
	InFlight      int    // inbound requests open now
	Clients       int    // client addresses with a request open
	PendingBytes  int64  // body bytes counted against the budget now
	BudgetBytes   int64  // the budget
	RefusedClient uint64 // answered 429: a client over its share
	RefusedBusy   uint64 // answered 503: all inbound slots taken
	RefusedBudget uint64 // answered 503: the body budget spent
	// Shedding is true while refusals for load happened within the last
	// ten seconds.
	Shedding bool
}

// gate admits inbound requests: per client, in all, and by body memory.
type gate struct {
	l   InboundLimits
	now func() time.Time

	mu       sync.Mutex
	inflight int
	clients  map[netip.Addr]int
	pending  int64

	refusedClient, refusedBusy, refusedBudget atomic.Uint64
	lastShed                                  atomic.Int64 // unix nanoseconds
}

func newGate(l InboundLimits) *gate {
	return &gate{l: l, now: time.Now, clients: map[netip.Addr]int{}}
}

// enter takes a slot for a request from client, or says why not.
// Every successful enter is paired with one leave.
func (g *gate) enter(client netip.Addr) *Error {
	key := clientKey(client)
	g.mu.Lock()
	switch {
	case g.inflight >= g.l.MaxInFlight:
		g.mu.Unlock()
		g.refusedBusy.Add(1)
		g.shed()
		return ErrBusy
	case g.clients[key] >= g.l.PerClient:
		g.mu.Unlock()
		g.refusedClient.Add(1)
		g.shed()
		return ErrClientBusy
	}
	g.inflight++
	g.clients[key]++
	g.mu.Unlock()
	return nil
}

func (g *gate) leave(client netip.Addr) {
	key := clientKey(client)
	g.mu.Lock()
	g.inflight--
	if n := g.clients[key] - 1; n > 0 {
		g.clients[key] = n
	} else {
		delete(g.clients, key)
	}
	g.mu.Unlock()
}

// reserve counts n body bytes against the budget, or refuses.
func (g *gate) reserve(n int64) bool {
	g.mu.Lock()
	if g.pending+n > g.l.BodyBudget {
		g.mu.Unlock()
		g.refusedBudget.Add(1)
		g.shed()
		return false
	}
	g.pending += n
	g.mu.Unlock()
	return true
}

func (g *gate) release(n int64) {
	g.mu.Lock()
	g.pending -= n
	g.mu.Unlock()
}

func (g *gate) shed() { g.lastShed.Store(g.now().UnixNano()) }

func (g *gate) stats() InboundStats {
	g.mu.Lock()
	st := InboundStats{InFlight: g.inflight, Clients: len(g.clients), PendingBytes: g.pending, BudgetBytes: g.l.BodyBudget}
	g.mu.Unlock()
	st.RefusedClient, st.RefusedBusy, st.RefusedBudget = g.refusedClient.Load(), g.refusedBusy.Load(), g.refusedBudget.Load()
	if last := g.lastShed.Load(); last != 0 {
		st.Shedding = g.now().Sub(time.Unix(0, last)) < shedWindow
	}
	return st
}

// errBodyBudget is what reading an inbound body returns when the budget
// cannot hold it.
var errBodyBudget = errors.New("inbound body budget spent")

// budgetBody counts an inbound body against the gate's budget from its
// first read (a request refused on its headers costs nothing) until it is
// authenticated or the request ends.
type budgetBody struct {
	io.ReadCloser
	g        *gate
	size     int64 // what the body is counted as
	held     bool
	released bool
}

func newBudgetBody(r *http.Request, g *gate) *budgetBody {
	size := r.ContentLength
	if size < 0 || size > MaxInboundBody {
		size = MaxInboundBody
	}
	return &budgetBody{ReadCloser: r.Body, g: g, size: size}
}

// take reserves the body's share now; false when the budget cannot.
func (b *budgetBody) take() bool {
	if b.held || b.released {
		return true
	}
	if !b.g.reserve(b.size) {
		return false
	}
	b.held = true
	return true
}

func (b *budgetBody) Read(p []byte) (int, error) {
	if !b.take() {
		return 0, errBodyBudget
	}
	return b.ReadCloser.Read(p)
}

// authenticated ends the body's count: it is no longer a stranger's.
func (b *budgetBody) authenticated() {
	if b.held {
		b.g.release(b.size)
		b.held = false
	}
	b.released = true
}

// authenticated tells the server that r's body passed its signature
// check, so it no longer counts against the budget for bodies not yet
// authenticated.
func authenticated(r *http.Request) {
	if b, ok := r.Body.(interface{ authenticated() }); ok {
		b.authenticated()
	}
}
