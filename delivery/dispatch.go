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
}

// Router resolves a recipient (address or configured name) to a Route.
type Router interface {
	Resolve(recipient string) (Route, error)
}

// HoldPolicy decides whether a recipient's pushes are held right now
// (quiet hours, mute) and until when.
type HoldPolicy interface {
	Hold(ctx context.Context, recipient, taskID string, urgentDue time.Time, now time.Time) (until time.Time, held bool)
}

// Hooks lets the task manager hear about recipients the provider changed.
type Hooks struct {
	Unreachable func(ctx context.Context, taskID, recipient, reason string)
	Migrated    func(ctx context.Context, taskID, from, to string)
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
	Log                   zerolog.Logger
	Metrics               *Metrics
}

// Metrics are the dispatcher's Prometheus series (no recipient labels: I10).
type Metrics struct {
	Attempts *prometheus.CounterVec // kind, result
	Latency  prometheus.Histogram
	Held     prometheus.Counter // pushes held by quiet hours or a mute
	Released prometheus.Counter // held pushes let out early (/quiet off, /mute off)
}

// NewMetrics registers the dispatcher's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_delivery_attempts_total", Help: "Delivery attempts by recipient kind and result."}, []string{"kind", "result"}),
		Latency:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "herald_delivery_seconds", Help: "Time from claim to completed delivery.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		Held:     prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_held_total", Help: "Pushes held by quiet hours or a mute."}),
		Released: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_released_total", Help: "Held pushes let out early because quiet hours or a mute was lifted."}),
	}
	if reg != nil {
		reg.MustRegister(m.Attempts, m.Latency, m.Held, m.Released)
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
	done  <-chan struct{} // closed when Run's context ends

	direct   chan struct{}        // free slots for hand-offs (Reserve)
	directWG sync.WaitGroup       // hand-offs in progress
	handoffs chan handoff         // to Run's idle hand-off goroutines (unbuffered)
	limbo    map[string]time.Time // unconfirmed claims to check, until when (Unconfirmed)

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
	if o.Worker == "" {
		o.Worker = "worker"
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return &Dispatcher{o: o, wake: make(chan struct{}, 1), taken: map[string]bool{}, busy: map[string]bool{}, direct: make(chan struct{}, o.Workers), handoffs: make(chan handoff)}, nil
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
	index := map[string]int{}
	var out []group
	for _, fx := range due {
		if d.taken[fx.Key] {
			continue
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

// deliver sends one group as one message, part by part, recording each
// attempt before it crosses the boundary (Begin) and its outcome after.
func (d *Dispatcher) deliver(ctx context.Context, g group) {
	now := d.o.Now()
	recipient, taskID := g.fx[0].Recipient, g.fx[0].TaskID
	route, err := d.o.Router.Resolve(recipient)
	if g.begun {
		// Claimed in flight for this worker (Reserve/Handoff): the checks
		// below were made at reservation; only the send is left.
		if err != nil {
			d.settleAll(ctx, g.fx, func(store.Effect) store.Outcome {
				return store.Outcome{State: store.Failed, Error: "recipient_unknown"}
			})
			return
		}
		d.send(ctx, route, g.fx, g.fx, g.msg, g.answered)
		return
	}
	log := d.o.Log.With().Str("task", taskID).Logger()
	switch {
	case errors.Is(err, ErrTransportOff):
		// Waits durably for the transport to come back (config reload);
		// expiry still ends it if that takes too long.
		until := now.Add(offRetry)
		d.each(len(g.fx), func(i int) {
			if _, err := d.o.Ledger.Defer(ctx, g.fx[i].Key, until, reasonTransportOff, now); err != nil {
				log.Warn().Err(err).Msg("cannot hold a push")
			}
		})
		log.Warn().Err(err).Msg("holding pushes while their transport is off")
		return
	case err != nil:
		d.each(len(g.fx), func(i int) { d.expire(ctx, g.fx[i].Key, "recipient_unknown", now) })
		log.Warn().Err(err).Msg("dropping pushes for a recipient that no longer exists")
		return
	}
	var live, expired []store.Effect
	var urgent time.Time
	for _, fx := range g.fx {
		if !fx.ExpiresAt.IsZero() && !now.Before(fx.ExpiresAt) {
			expired = append(expired, fx)
			continue
		}
		if fx.Kind == KindDeadline {
			if due := fx.ExpiresAt; !due.IsZero() && (urgent.IsZero() || due.Before(urgent)) {
				urgent = due
			}
		}
		live = append(live, fx)
	}
	d.each(len(expired), func(i int) { d.expire(ctx, expired[i].Key, "expired", now) })
	if len(live) == 0 {
		return
	}
	if d.o.Holds != nil {
		if until, held := d.o.Holds.Hold(ctx, holdAddress(recipient, route), taskID, urgent, now); held {
			d.each(len(live), func(i int) {
				if _, err := d.o.Ledger.Defer(ctx, live[i].Key, until, reasonHeld, now); err != nil {
					log.Warn().Err(err).Msg("cannot hold a push")
				}
				d.o.Metrics.Held.Inc()
			})
			return
		}
	}
	joined, ended, wait := d.inOrder(ctx, live, now)
	d.endWithMessage(ctx, ended)
	if !wait.IsZero() {
		d.each(len(joined), func(i int) {
			fx := joined[i]
			if _, err := d.o.Ledger.Defer(ctx, fx.Key, notAfter(wait, fx.ExpiresAt), reasonOrder, now); err != nil {
				log.Warn().Err(err).Msg("cannot hold a push behind an earlier one")
			}
		})
		return
	}
	if len(joined) == 0 {
		return
	}
	for _, one := range oneTypeEach(route, joined) {
		d.send(ctx, route, one, nil, nil, nil)
	}
}

// oneTypeEach splits a group for a webhook recipient by message type: a
// webhook body carries one type, so deadline reminders go as their own
// watch.deadline POST, before the run's watch.changed one. Chats get the
// group as one message.
func oneTypeEach(route Route, live []store.Effect) [][]store.Effect {
	if route.To.Kind != Webhook {
		return [][]store.Effect{live}
	}
	var deadlines, rest []store.Effect
	for _, fx := range live {
		if fx.Kind == KindDeadline {
			deadlines = append(deadlines, fx)
		} else {
			rest = append(rest, fx)
		}
	}
	if len(deadlines) == 0 || len(rest) == 0 {
		return [][]store.Effect{live}
	}
	return [][]store.Effect{deadlines, rest}
}

// send delivers live as one message, part by part: each part is begun in
// the ledger (unless begun is given: already in flight for this worker),
// sent, and settled. msg, when given, is what begun's payloads encode.
// Every begun effect shares the message's outcome, including those whose
// item the message carries folded into a later state (merge): they were
// delivered exactly when the message was. answered, when set, is called
// as soon as the recipient answered the first part, before the outcome
// is recorded.
func (d *Dispatcher) send(ctx context.Context, route Route, live, begun []store.Effect, msg *Message, answered func()) {
	recipient, taskID := live[0].Recipient, live[0].TaskID
	var now time.Time
	for again := false; ; again = true {
		if begun == nil {
			begun = d.begin(ctx, live)
			if !again {
				var back []store.Effect
				begun, back = wonInOrder(live, begun)
				d.giveBack(ctx, back)
			}
		}
		if len(begun) == 0 {
			return
		}
		if msg == nil {
			m, empty, err := merge(begun)
			if err != nil {
				d.settleAll(ctx, begun, func(store.Effect) store.Outcome {
					return store.Outcome{State: store.Failed, Error: "bad_payload"}
				})
				return
			}
			if empty && begun[0].PartsSent == 0 {
				// Every item came and went while held: nothing crosses
				// the boundary, and there is nothing left to tell.
				d.settleAll(ctx, begun, func(store.Effect) store.Outcome {
					return store.Outcome{State: store.Completed, Error: reasonNothingNew}
				})
				return
			}
			msg = &m
		}
		first := begun[0]
		part := first.PartsSent
		attempt := len(first.Attempts)
		if !d.sending(ctx, begun, part) {
			return
		}
		out := route.Sink.Send(ctx, Delivery{Key: first.Key, To: route.To, Message: *msg, Lang: route.Lang, Zone: route.Zone, Attempt: attempt, Part: part})
		if answered != nil {
			answered()
			answered = nil
		}
		d.o.Metrics.Attempts.WithLabelValues(string(route.To.Kind), out.Result.String()).Inc()
		if out.MigratedTo != "" && d.o.Hooks.Migrated != nil {
			d.o.Hooks.Migrated(ctx, taskID, recipient, out.MigratedTo)
		}
		now = d.o.Now()
		switch out.Result {
		case Completed:
			if out.Parts > part+1 { // more parts: each its own recorded attempt
				d.settleAll(ctx, begun, func(store.Effect) store.Outcome {
					// This worker sends the next part at once; RetryAt only
					// matters if it dies first, and keeps other replicas from
					// taking the group apart in between.
					return store.Outcome{State: store.Pending, RetryAt: now.Add(partHold), PartsSent: part + 1, ProviderID: out.ProviderID}
				})
				live, begun, msg = begun, nil, nil // the next part may win fewer: merge again
				continue
			}
			d.settleAll(ctx, begun, func(fx store.Effect) store.Outcome {
				d.o.Metrics.Latency.Observe(now.Sub(fx.CreatedAt).Seconds())
				return store.Outcome{State: store.Completed, ProviderID: out.ProviderID, PartsSent: max(out.Parts, 1)}
			})
		case RetryAfter: // provably not sent: queue again, never block a worker
			at := now.Add(max(out.After, time.Second))
			d.settleAll(ctx, begun, func(fx store.Effect) store.Outcome {
				// A retry is never scheduled past the effect's expiry: it
				// comes back at ExpiresAt and ends there, unsent.
				return store.Outcome{State: store.Pending, RetryAt: notAfter(at, fx.ExpiresAt), Error: out.Reason, PartsSent: part}
			})
		case Failed:
			d.settleAll(ctx, begun, func(store.Effect) store.Outcome {
				return store.Outcome{State: store.Failed, Error: out.Reason, PartsSent: part}
			})
			if out.Unreachable && d.o.Hooks.Unreachable != nil {
				d.o.Hooks.Unreachable(ctx, taskID, recipient, out.Reason)
			}
		default: // Unknown: replay only where the provider dedups by the key (I3)
			// The group is replayed whole or not at all, so the replay
			// carries the same delivery key and the provider can drop it.
			tries := partAttempts(first, part)
			at := now.Add(backoff(tries))
			replay := route.Dedups && tries < d.o.MaxIdempotentAttempts
			for _, fx := range begun {
				// A replay must fit before expiry: an expired effect ends
				// failed, which would misreport an attempt that may have
				// arrived.
				replay = replay && (fx.ExpiresAt.IsZero() || at.Before(fx.ExpiresAt))
			}
			d.settleAll(ctx, begun, func(store.Effect) store.Outcome {
				if replay {
					return store.Outcome{State: store.Pending, RetryAt: at, Error: out.Reason, PartsSent: part}
				}
				return store.Outcome{State: store.Unknown, Error: out.Reason, PartsSent: part}
			})
		}
		return
	}
}

// begin records a new attempt on each effect of a group, concurrently so
// the store can commit them together, and returns the ones this worker
// won, in group order (the first one's key is the message's delivery key).
func (d *Dispatcher) begin(ctx context.Context, fxs []store.Effect) []store.Effect {
	won := make([]store.Effect, len(fxs))
	ok := make([]bool, len(fxs))
	now := d.o.Now()
	d.each(len(fxs), func(i int) {
		b, err := d.o.Ledger.Begin(ctx, fxs[i].Key, d.o.Worker, len(fxs[i].Attempts), now)
		if err != nil {
			return // taken by another worker or replica, no longer pending, or attempted since it was read
		}
		won[i], ok[i] = b, true
	})
	out := won[:0]
	for i, b := range won {
		if ok[i] {
			out = append(out, b)
		}
	}
	sortGroup(out)
	return out
}

// settleAll records each effect's outcome, concurrently so the store can
// commit them together.
func (d *Dispatcher) settleAll(ctx context.Context, fxs []store.Effect, outcome func(store.Effect) store.Outcome) {
	d.each(len(fxs), func(i int) { d.settle(ctx, fxs[i].Key, outcome(fxs[i])) })
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

// offRetry is how long pushes wait before looking again at a transport
// that is switched off.
const offRetry = time.Minute

// partHold keeps a split message's group together between its parts.
const partHold = 30 * time.Second

// settleFor is how long an outcome is retried while the store does not
// answer; past it the attempt stays in flight and reads as unknown once
// recovered (I3) — never as "not sent".
const settleFor = 10 * time.Minute

func (d *Dispatcher) settle(ctx context.Context, key string, o store.Outcome) {
	wait := 100 * time.Millisecond
	deadline := time.Now().Add(settleFor)
	for logged := false; ; {
		_, err := d.o.Ledger.Settle(ctx, key, o, d.o.Now())
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			d.o.Log.Error().Err(err).Str("effect", key).Msg("cannot record a delivery outcome; it will read as unknown after recovery")
			return
		}
		if !logged {
			d.o.Log.Warn().Err(err).Str("effect", key).Msg("store unavailable; keeping the outcome until it answers")
			logged = true
		}
		select {
		case <-time.After(wait):
		case <-d.stopping(): // shutting down: the attempt stays in flight and recovers as unknown
			d.o.Log.Error().Err(err).Str("effect", key).Msg("cannot record a delivery outcome before shutdown; it will read as unknown after recovery")
			return
		}
		wait = min(wait*2, 5*time.Second)
	}
}

func (d *Dispatcher) expire(ctx context.Context, key, reason string, now time.Time) {
	if _, err := d.o.Ledger.Expire(ctx, key, reason, now); err != nil && !errors.Is(err, store.ErrIllegalTransition) {
		d.o.Log.Warn().Err(err).Str("effect", key).Msg("cannot expire a push")
	}
}

func backoff(attempts int) time.Duration {
	d := time.Second << max(attempts-1, 0)
	return min(d, time.Minute)
}
