package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store"
)

// Route is where one recipient's pushes go.
type Route struct {
	Sink   Sink
	To     Address
	Lang   string
	Zone   *time.Location
	Dedups bool // the provider deduplicates by the delivery key (I3)
	// DedupWindow, when set, is how long after a first request the
	// provider still drops a repeat (Windowed).
	DedupWindow time.Duration
	// Retry is the recipient's retry schedule and disable policy (Retrying).
	Retry RetryPolicy
	// Translate (en | zh), when set, asks the Model for a translation of
	// each notice to the recipient (recipients.<name>.translate).
	Translate string
	// Digest, when its Schedule is set, is the recipient's digest
	// (recipients.<name>.digest); a chat's own (/digest) is the
	// DigestPolicy's.
	Digest DigestPlan
	// OwnerOnly: only the replica that schedules the push's task delivers
	// it (Options.Owns); the sink keeps what it sends on that replica's
	// disk (a course download).
	OwnerOnly bool
	// Format and Template are how the recipient wants its notices laid
	// out (layout.go): full, title or link; and a template of its own,
	// which wins over the task's.
	Format, Template string
}

// Router resolves a recipient (address or configured name) to a Route.
type Router interface {
	Resolve(recipient string) (Route, error)
}

// Hooks lets the task manager hear about recipients the provider changed.
type Hooks struct {
	Unreachable func(ctx context.Context, taskID, recipient, reason string)
	Migrated    func(ctx context.Context, taskID, from, to string)
	// Disabled is told when a push disabled its recipient (disable.go),
	// with the recipient's disable generation: one notice per generation.
	Disabled func(ctx context.Context, taskID, recipient string, st RecipientState)
}

// Options configure a Dispatcher.
type Options struct {
	Ledger  store.Ledger
	Router  Router
	Holds   HoldPolicy // nil: nothing is held
	Hooks   Hooks
	Worker  string // this replica's worker id (recorded on each attempt)
	Workers int    // concurrent sends (default 64: each waits on two store commits per push)
	Now     func() time.Time
	// Poll is how often the queue is looked at without a wake-up (other
	// replicas may queue work). Default 1 s.
	Poll time.Duration
	// MaxIdempotentAttempts bounds the attempts at one part of a message
	// whose outcome is unknown, for deduplicating providers (default 8;
	// counted afresh after a human redelivery); the replays wait 1 s, 2 s,
	// 4 s … capped at 1 min, and none is scheduled past the push's expiry.
	MaxIdempotentAttempts int
	// Owns reports whether this replica schedules a task now; pushes of
	// OwnerOnly routes for tasks it does not schedule are left to the
	// replica that does (owner.go). nil: every task is this replica's.
	Owns func(taskID string) bool
	// Recipients keeps which recipients are disabled and how their
	// deliveries went, for every replica (disable.go). nil: none is ever
	// disabled.
	Recipients Recipients
	// Jitter returns a number in [0, 1) that stretches a scheduled retry's
	// wait by up to 10 % (retry.go). Default: math/rand.
	Jitter func() float64
	// Observe is how often the retry and disable gauges are read from
	// the store (default 30 s; observe.go).
	Observe time.Duration
	Log     zerolog.Logger
	Metrics *Metrics
	// Digests tells which chats take their notices as digests (/digest;
	// nil: none does); a named recipient's is its Route.Digest.
	Digests DigestPolicy
	// Model, when set, writes the machine-written part of notices
	// (summarize, translate); nil: notices go out as they are.
	Model Model
}

// Metrics are the dispatcher's Prometheus series (no recipient labels: I10).
type Metrics struct {
	Attempts *prometheus.CounterVec // kind, result
	Latency  prometheus.Histogram
	Held     prometheus.Counter // pushes held by quiet hours or a mute
	Released prometheus.Counter // held pushes let out early (/quiet off, /mute off)
	// Retry schedules (retry.go, observe.go).
	Retries        *prometheus.CounterVec // kind, outcome: scheduled | exhausted
	RetriesWaiting prometheus.Gauge
	OldestRetry    prometheus.Gauge // seconds since the oldest waiting retry's push first failed
	Disabled       prometheus.Gauge // recipients disabled now
}

// NewMetrics registers the dispatcher's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_delivery_attempts_total", Help: "Delivery attempts by recipient kind and result."}, []string{"kind", "result"}),
		Latency:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "herald_delivery_seconds", Help: "Time from claim to completed delivery.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		Held:     prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_held_total", Help: "Pushes held by quiet hours or a mute."}),
		Released: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_released_total", Help: "Held pushes let out early because quiet hours or a mute was lifted."}),
	}
	m.Retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_delivery_retries_total", Help: "Failed attempts retried on a schedule (scheduled), or ended by its last retry (exhausted), by recipient kind."}, []string{"kind", "outcome"})
	m.RetriesWaiting = prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_delivery_retries_waiting", Help: "Pushes waiting for a scheduled retry."})
	m.OldestRetry = prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_delivery_oldest_retry_seconds", Help: "Seconds since the oldest push waiting for a scheduled retry first failed."})
	m.Disabled = prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_recipients_disabled", Help: "Recipients disabled now (gone, or failing too long)."})
	if reg != nil {
		reg.MustRegister(m.Attempts, m.Latency, m.Held, m.Released, m.Retries, m.RetriesWaiting, m.OldestRetry, m.Disabled)
	}
	return m
}

// Dispatcher takes queued effects from the ledger and delivers them.
type Dispatcher struct {
	o    Options
	wake chan struct{}

	mu    sync.Mutex
	taken map[string]bool // keys handed to a worker in this process
	busy  map[string]bool // tasks and recipients with a group in a worker (order.go)
	// notMine are pushes left to the replica that owns their task, and
	// until when take passes them over (owner.go).
	notMine map[string]time.Time
	done    <-chan struct{} // closed when Run's context ends

	direct   chan struct{}        // free slots for hand-offs (Reserve)
	directWG sync.WaitGroup       // hand-offs in progress
	handoffs chan handoff         // to Run's idle hand-off goroutines (unbuffered)
	limbo    map[string]time.Time // unconfirmed claims to check, until when (Unconfirmed)

	recips   recipientCache // disable.go
	machines machineMemo    // annotate.go

	// releasing keeps take from reading the queue while Release makes a
	// chat's held pushes due, so they are taken together, as one message.
	releasing sync.RWMutex
}

// NewDispatcher returns a dispatcher; call Run.
func NewDispatcher(o Options) (*Dispatcher, error) {
	if o.Ledger == nil || o.Router == nil {
		return nil, errors.New("delivery: Ledger and Router are required")
	}
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.MaxIdempotentAttempts <= 0 {
		o.MaxIdempotentAttempts = 8
	}
	if o.Observe <= 0 {
		o.Observe = 30 * time.Second
	}
	if o.Jitter == nil {
		o.Jitter = defaultJitter
	}
	if o.Worker == "" {
		o.Worker = "worker"
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return &Dispatcher{o: o, wake: make(chan struct{}, 1), taken: map[string]bool{}, busy: map[string]bool{}, notMine: map[string]time.Time{}, direct: make(chan struct{}, o.Workers), handoffs: make(chan handoff)}, nil
}

// Wake tells the dispatcher new work was queued.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// group is the effects sent as one message.
type group struct {
	fx    []store.Effect
	begun bool     // claimed in flight for this worker already (Handoff)
	msg   *Message // what fx's payloads encode, if known (Handoff)
	// answered, when set, is called once the recipient has answered the
	// first send, or the group goes unsent (Handoff).
	answered func()
}

// Run delivers until ctx ends; in-flight sends finish (bounded by the
// sinks' own timeouts) before it returns.
func (d *Dispatcher) Run(ctx context.Context) error {
	// Open this worker's sending record before anything can be handed
	// over (Reserve declines until done is set): from here on, recovery
	// tells an attempt that never left from one that may have.
	if err := d.o.Ledger.Sending(ctx, d.o.Worker, nil); err != nil && ctx.Err() == nil {
		d.o.Log.Warn().Err(err).Msg("cannot open the sending record; interrupted pushes will read as unknown")
	}
	d.mu.Lock()
	d.done = ctx.Done()
	d.mu.Unlock()
	work := make(chan group)
	var wg sync.WaitGroup
	for range d.o.Workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for g := range work {
				d.deliver(context.WithoutCancel(ctx), g)
				d.release(g)
			}
		}()
		go func() {
			defer wg.Done()
			d.handing(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.observing(ctx)
	}()
	defer func() { close(work); wg.Wait(); d.directWG.Wait() }()
	for {
		if ctx.Err() != nil {
			return nil
		}
		groups, err := d.take(ctx)
		if err != nil && ctx.Err() == nil {
			d.o.Log.Warn().Err(err).Msg("cannot read the delivery queue; retrying")
		}
		for i, g := range groups {
			select {
			case work <- g:
			case <-ctx.Done():
				for _, g := range groups[i:] { // a later Run must see them again
					d.release(g)
				}
				return nil
			}
		}
		if len(groups) > 0 {
			continue
		}
		// Sleep until the next effect falls due. When the earliest due
		// effects are already in workers' hands, a finishing worker wakes
		// the loop (release) rather than the loop re-reading the queue.
		wait := d.o.Poll
		if at, ok, err := d.o.Ledger.NextDue(ctx); err == nil && ok {
			if w := at.Sub(d.o.Now()); w > 0 && w < wait {
				wait = w
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-d.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (d *Dispatcher) release(g group) {
	d.mu.Lock()
	for _, fx := range g.fx {
		delete(d.taken, fx.Key)
	}
	if !g.begun && ordered(g.fx[0].Kind) {
		delete(d.busy, orderKey(g.fx[0]))
	}
	d.mu.Unlock()
	d.Wake()
}

// take reads due effects not already handed out and groups them: watch
// events of one recipient queued together become one message; inbound,
// state and test pushes go one by one. A task's watch events to one
// recipient go one group at a time, the earliest due first (order.go).
func (d *Dispatcher) take(ctx context.Context) ([]group, error) {
	d.releasing.RLock()
	defer d.releasing.RUnlock()
	due, err := d.o.Ledger.Due(ctx, d.o.Now(), 512)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgetNotMine(d.o.Now())
	index := map[string]int{}
	var out []group
	for _, fx := range due {
		if d.taken[fx.Key] {
			continue
		}
		if _, skip := d.notMine[fx.Key]; skip {
			continue // another replica's to deliver (owner.go)
		}
		if !ordered(fx.Kind) {
			d.taken[fx.Key] = true
			out = append(out, group{fx: []store.Effect{fx}})
			continue
		}
		ok := orderKey(fx)
		k := ok + "\x00" + fx.NotBefore.UTC().Format(time.RFC3339Nano)
		if i, in := index[k]; in {
			if len(out[i].fx) < 500 {
				d.taken[fx.Key] = true
				out[i].fx = append(out[i].fx, fx)
			}
			continue
		}
		if d.busy[ok] {
			continue // a group of this task and recipient is out; this one waits for it
		}
		d.busy[ok], d.taken[fx.Key] = true, true
		index[k] = len(out)
		out = append(out, group{fx: []store.Effect{fx}})
	}
	return out, nil
}

// ledgerFanout bounds the concurrent ledger writes of one group.
const ledgerFanout = 32

// each runs fn(0..n-1) with at most ledgerFanout at once; a lone call runs
// inline.
func (d *Dispatcher) each(n int, fn func(i int)) {
	if n <= 1 {
		if n == 1 {
			fn(0)
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, ledgerFanout)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// notAfter returns t, or limit when limit is set and earlier.
func notAfter(t, limit time.Time) time.Time {
	if !limit.IsZero() && limit.Before(t) {
		return limit
	}
	return t
}
