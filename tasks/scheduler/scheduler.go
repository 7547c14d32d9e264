// Package scheduler decides when the catalog's tasks run, and where: it
// holds this replica's share of the scheduling shards with their leases
// and fences (I5), plans every owned task's next check and reminder in a
// wake-up heap, and starts due runs from a bounded pool under the global,
// per-host and per-session caps (I7). What a run does is a Runner's
// (tasks/runner); the catalog (tasks) wakes the scheduler when a task
// changes.
package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// Catalog is what the scheduler reads of the tasks (tasks.Manager).
type Catalog interface {
	Get(ctx context.Context, id string) (*tasks.Task, error)
	All(ctx context.Context) ([]*tasks.Task, error)
	Policy() tasks.Policy
	RecordRun(ctx context.Context, rec tasks.RunRecord)
}

var _ Catalog = (*tasks.Manager)(nil)

// Admitter claims the collapsed baseline confirmations (delivery.Admitter).
type Admitter interface {
	Admit(ctx context.Context, a delivery.Admission) (store.CommitResult, error)
}

var _ Admitter = (*delivery.Admitter)(nil)

// Options configure a Scheduler.
type Options struct {
	Store   store.Store
	Catalog Catalog
	Runner  Runner
	Admit   Admitter
	Clock   tasks.Clock    // default tasks.RealClock
	Zone    *time.Location // default zone for schedules; default UTC
	Log     zerolog.Logger
	// Holder names this replica (lease holder, delivery worker id).
	Holder string
	// LeaseTTL is a scheduling shard lease's lifetime (default 15 s;
	// renewed every TTL/4).
	LeaseTTL time.Duration
	// Shards shares the scheduling shards among replicas (I5). nil: the
	// store's own when it has them, else the one scheduler lease.
	Shards store.ShardLeases
	// WakeDelivery is called after effects were queued again on recovery.
	WakeDelivery func()
	// Alive reports whether a delivery worker is still running; in-flight
	// attempts of dead workers become unknown on recovery (I3).
	Alive func(worker string) bool
	// StartSpread is the most the checks owed at a start or takeover are
	// spread over, a second apart on average (SPEC §18; default 3 min,
	// negative: none).
	StartSpread time.Duration
	// Replay reports whether an interrupted push that may have been sent
	// may be sent again under its key (its recipient deduplicates by it);
	// nil: never (I3).
	Replay func(fx store.Effect) bool
}

func (o *Options) validate() error {
	if o.Store == nil || o.Catalog == nil || o.Runner == nil || o.Admit == nil {
		return errors.New("scheduler: Options.Store, Catalog, Runner and Admit are required")
	}
	if o.Clock == nil {
		o.Clock = tasks.RealClock{}
	}
	if o.Zone == nil {
		o.Zone = time.UTC
	}
	if o.Holder == "" {
		o.Holder = "herald-" + tasks.RandomID(4)
	}
	if o.StartSpread == 0 {
		o.StartSpread = 3 * time.Minute
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.WakeDelivery == nil {
		o.WakeDelivery = func() {}
	}
	if o.Alive == nil {
		holder := o.Holder
		o.Alive = func(w string) bool { return w == holder }
	}
	return nil
}

// Scheduler plans and starts the runs of the tasks this replica owns.
type Scheduler struct {
	o     Options
	store store.Store
	cat   Catalog
	clock tasks.Clock
	log   zerolog.Logger

	shards   *ownership // the scheduling shards this replica owns (I5)
	running  *runTable  // runs going or queued, and the source sessions (I7)
	dirty    *dirtySet  // tasks changed since the loop last planned them
	wake     chan struct{}
	runs     *slots    // the global cap on runs at once (I7)
	hosts    *hostGate // the per-host politeness cap
	watching *watching // collapsed baseline confirmations
}

var (
	_ tasks.Runs = (*Scheduler)(nil)
	_ Owner      = (*Scheduler)(nil)
)

// New returns a Scheduler; call Run to start scheduling.
func New(o Options) (*Scheduler, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &Scheduler{
		o: o, store: o.Store, cat: o.Catalog, clock: o.Clock, log: o.Log,
		shards: &ownership{}, running: newRunTable(), dirty: newDirtySet(), wake: make(chan struct{}, 1),
		runs: newSlots(o.Catalog.Policy().Limits.Concurrency), hosts: newHostGate(), watching: newWatching(),
	}, nil
}

// Touch asks the scheduling loop to re-read a task.
func (s *Scheduler) Touch(id string) {
	s.dirty.add(id)
	s.poke()
}

// poke wakes the scheduling loop.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SetLimits resizes the global cap on runs (a reload); the per-host caps
// follow the policy at each run.
func (s *Scheduler) SetLimits(l tasks.Limits) { s.runs.resize(l.Concurrency) }

// RunNow runs task id now and returns the run's record; tasks.ErrNotOwner
// when this replica does not schedule it.
func (s *Scheduler) RunNow(ctx context.Context, id string) (tasks.RunRecord, error) {
	owner := s.runContext(id)
	if owner == nil {
		return tasks.RunRecord{}, tasks.ErrNotOwner
	}
	r := s.startRun(owner, id, Check, false)
	select {
	case <-r.done:
		return r.rec, nil
	case <-ctx.Done():
		return tasks.RunRecord{}, ctx.Err()
	}
}

// Rebaseline has the runner take t's new baseline under t's fence (I5).
func (s *Scheduler) Rebaseline(ctx context.Context, t *tasks.Task) error {
	fence := s.shards.fence(t.ID)
	if fence.IsZero() {
		return tasks.ErrNotOwner
	}
	return s.o.Runner.Rebaseline(ctx, t, fence)
}

// Cancel cancels a task's run in progress (I9). It reports whether one was running.
func (s *Scheduler) Cancel(id string) bool {
	return s.running.cancel(id)
}

// Owns implements Owner.
func (s *Scheduler) Owns(f store.Fence) bool { return s.shards.owns(f) }

// Baselines implements Owner.
func (s *Scheduler) Baselines() Baselines { return baselines{s} }

// Enter implements Owner. The source session is taken before a place
// among its host's checks and a slot of the global cap: a run waiting
// for a busy session must not hold a slot other sources need (I7), and
// every wait ends when the run is cancelled (I9).
func (s *Scheduler) Enter(ctx context.Context, t *tasks.Task) (func(), error) {
	sess := s.running.session(sessionKey(t))
	select {
	case sess <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	leaveHost, err := s.hosts.enter(ctx, t.Source.URL, s.cat.Policy().Limits)
	if err != nil {
		<-sess
		return nil, err
	}
	if err := s.runs.acquire(ctx); err != nil {
		leaveHost()
		<-sess
		return nil, err
	}
	return func() {
		s.runs.release()
		leaveHost()
		<-sess
	}, nil
}

// sessionKey names t's source session: host and credential. One run at a
// time per session (I7).
func sessionKey(t *tasks.Task) string {
	host := ""
	if u, err := url.Parse(t.Source.URL); err == nil {
		host = strings.ToLower(u.Host)
	}
	h := sha256.New()
	keys := make([]string, 0, len(t.Source.Headers))
	for k := range t.Source.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte(k + "\x00" + t.Source.Headers[k] + "\x00"))
	}
	h.Write([]byte("token\x00" + t.Source.Token + "\x00" + t.Source.TokenFrom))
	if a := t.Source.Auth; a != nil {
		// A sign-in is a credential: two watches signing in as one person
		// take turns with one session instead of signing each other out.
		h.Write([]byte("auth\x00" + a.Cookie))
		if a.Login != nil {
			h.Write([]byte("\x00" + a.Login.URL))
			for _, k := range slices.Sorted(maps.Keys(a.Login.Form)) {
				h.Write([]byte("\x00" + k + "=" + a.Login.Form[k]))
			}
		}
	}
	return host + "|" + hex.EncodeToString(h.Sum(nil)[:8])
}

// job is the Job of a run of task id starting now.
func (s *Scheduler) job(id string, due Due, scheduled bool) Job {
	return Job{TaskID: id, Due: due, Scheduled: scheduled, Fence: s.shards.fence(id), Owner: s}
}

// dirtySet is the tasks changed since the loop last planned them.
type dirtySet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func newDirtySet() *dirtySet { return &dirtySet{ids: map[string]bool{}} }

func (d *dirtySet) add(id string) {
	d.mu.Lock()
	d.ids[id] = true
	d.mu.Unlock()
}

// take returns the set and starts a new one.
func (d *dirtySet) take() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := d.ids
	d.ids = map[string]bool{}
	return ids
}
