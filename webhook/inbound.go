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
	// DefaultOtherPerClient is how many requests to the other routes
	// (console, admin, inbox and agent APIs) one client address may have
	// open at once.
	DefaultOtherPerClient = 64
	// otherBodyTimeout is how long the other routes wait for a body.
	otherBodyTimeout = 10 * time.Second
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
	// may hold at once, all clients together; a body is counted at the
	// buffer its declared length takes (1 MiB when undeclared) from its
	// first read until it is authenticated or answered. The next gets 503.
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

// clientSlots counts the requests each client address has open.
type clientSlots struct {
	mu  sync.Mutex
	max int
	n   map[netip.Addr]int
}

func newClientSlots(max int) *clientSlots {
	return &clientSlots{max: max, n: map[netip.Addr]int{}}
}

// take opens a slot for client, or reports that it has all its share.
func (c *clientSlots) take(client netip.Addr) bool {
	key := clientKey(client)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] >= c.max {
		return false
	}
	c.n[key]++
	return true
}

func (c *clientSlots) give(client netip.Addr) {
	key := clientKey(client)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.n[key] - 1; n > 0 {
		c.n[key] = n
	} else {
		delete(c.n, key)
	}
}

func (c *clientSlots) clients() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.n)
}

// gate admits inbound requests: per client, in all, and by body memory.
type gate struct {
	l       InboundLimits
	now     func() time.Time
	clients *clientSlots

	mu       sync.Mutex
	inflight int
	pending  int64

	refusedClient, refusedBusy, refusedBudget atomic.Uint64
	lastShed                                  atomic.Int64 // unix nanoseconds
}

func newGate(l InboundLimits) *gate {
	return &gate{l: l, now: time.Now, clients: newClientSlots(l.PerClient)}
}

// enter takes a slot for a request from client, or says why not.
// Every successful enter is paired with one leave.
func (g *gate) enter(client netip.Addr) *Error {
	g.mu.Lock()
	if g.inflight >= g.l.MaxInFlight {
		g.mu.Unlock()
		g.refusedBusy.Add(1)
		g.shed()
		return ErrBusy
	}
	g.inflight++
	g.mu.Unlock()
	if !g.clients.take(client) {
		g.mu.Lock()
		g.inflight--
		g.mu.Unlock()
		g.refusedClient.Add(1)
		g.shed()
		return ErrClientBusy
	}
	return nil
}

func (g *gate) leave(client netip.Addr) {
	g.clients.give(client)
	g.mu.Lock()
	g.inflight--
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
	st := InboundStats{InFlight: g.inflight, PendingBytes: g.pending, BudgetBytes: g.l.BodyBudget}
	g.mu.Unlock()
	st.Clients = g.clients.clients()
	st.RefusedClient, st.RefusedBusy, st.RefusedBudget = g.refusedClient.Load(), g.refusedBusy.Load(), g.refusedBudget.Load()
	if last := g.lastShed.Load(); last != 0 {
		st.Shedding = g.now().Sub(time.Unix(0, last)) < shedWindow
	}
	return st
}

// errBodyBudget is what reading an inbound body returns when the budget
// cannot hold it.
var errBodyBudget = errors.New("inbound body budget spent")

// requestBody watches a request body: whether it was read to its end
// (a response written before that closes the connection rather than
// wait for the rest, which may come slowly on purpose), and, on the
// inbound routes, its count against the budget for bodies not yet
// authenticated, from its first read (a request refused on its headers
// costs nothing) until it is authenticated or the request ends.
type requestBody struct {
	io.ReadCloser
	eof   bool
	onEOF func()
	http1 bool // an HTTP/1 connection: an early answer closes it

	g        *gate // nil: not counted
	size     int64 // what the body is counted as
	held     bool
	released bool
}

// count makes the body count against g's budget, at the buffer its
// declared length takes (MaxInboundBody when undeclared).
func (b *requestBody) count(g *gate, declared int64) {
	if declared < 0 || declared > MaxInboundBody {
		declared = MaxInboundBody
	}
	b.g, b.size = g, int64(bufferSize(int(declared)+1))
}

// take reserves the body's share now; false when the budget cannot.
func (b *requestBody) take() bool {
	if b.g == nil || b.held || b.released {
		return true
	}
	if !b.g.reserve(b.size) {
		return false
	}
	b.held = true
	return true
}

func (b *requestBody) Read(p []byte) (int, error) {
	if !b.take() {
		return 0, errBodyBudget
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof {
		b.eof = true
		if b.onEOF != nil {
			b.onEOF()
		}
	}
	return n, err
}

// authenticated ends the body's count: it is no longer a stranger's.
func (b *requestBody) authenticated() {
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
