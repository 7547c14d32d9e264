// Package engine assembles herald's task engine from its parts: the
// catalog (tasks), the scheduler (tasks/scheduler), the runner
// (tasks/runner) and effect admission (delivery.Admitter). It owns no
// state of its own; it wires the parts and runs the scheduler.
package engine

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/runner"
	"github.com/herald-bridge/herald/tasks/scheduler"
)

// Options configure an Engine.
type Options struct {
	Store   store.Store
	Sources tasks.SourceOpener
	Policy  tasks.Policy
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
	// WakeDelivery is called after effects were queued.
	WakeDelivery func()
	// Alive reports whether a delivery worker is still running; in-flight
	// attempts of dead workers become unknown on recovery (I3).
	Alive func(worker string) bool
	// Replay reports whether an interrupted push that may have been sent
	// may be sent again under its key (its recipient deduplicates by it);
	// nil: never (I3).
	Replay func(fx store.Effect) bool
	// StartSpread is the most the checks owed at a start are spread over
	// (scheduler.Options.StartSpread; default 3 min, negative: none).
	StartSpread time.Duration
	// RetryWaits are the waits between source attempts (I6); default 1 s, 2 s.
	RetryWaits []time.Duration
	// Direct, when set, lets an admission for one recipient claim its push
	// already in flight for a free local delivery worker and hand it over.
	Direct delivery.Direct
	// Observe, when set, hears of every run recorded in a task's history,
	// with the task's source kind ("" when detected) (metrics).
	Observe func(kind string, r tasks.RunRecord)
}

// Engine is the wired parts.
type Engine struct {
	Catalog   *tasks.Manager
	Scheduler *scheduler.Scheduler
	Runner    *runner.Runner
	Admitter  *delivery.Admitter
}

// New wires an Engine; call Run to start scheduling.
func New(o Options) (*Engine, error) {
	if o.Sources == nil {
		return nil, errors.New("engine: Options.Sources is required")
	}
	if o.Clock == nil {
		o.Clock = tasks.RealClock{}
	}
	if o.Holder == "" {
		o.Holder = "herald-" + tasks.RandomID(4)
	}
	cat, err := tasks.New(tasks.Options{Store: o.Store, Policy: o.Policy, Clock: o.Clock, Zone: o.Zone, Log: o.Log,
		Holder: o.Holder, WakeDelivery: o.WakeDelivery})
	if err != nil {
		return nil, err
	}
	run, err := runner.New(runner.Options{Store: o.Store, Catalog: cat, Sources: o.Sources, Clock: o.Clock, Zone: o.Zone,
		Log: o.Log, RetryWaits: o.RetryWaits, WakeDelivery: o.WakeDelivery, Observe: o.Observe})
	if err != nil {
		return nil, err
	}
	ad := &delivery.Admitter{Ledger: o.Store.Ledger(), Now: o.Clock.Now, Wake: o.WakeDelivery, Direct: o.Direct}
	sch, err := scheduler.New(scheduler.Options{Store: o.Store, Catalog: cat, Runner: run, Admit: ad, Clock: o.Clock,
		Zone: o.Zone, Log: o.Log, Holder: o.Holder, LeaseTTL: o.LeaseTTL, Shards: o.Shards, WakeDelivery: o.WakeDelivery,
		Alive: o.Alive, Replay: o.Replay, StartSpread: o.StartSpread})
	if err != nil {
		return nil, err
	}
	cat.SetRuns(sch)
	return &Engine{Catalog: cat, Scheduler: sch, Runner: run, Admitter: ad}, nil
}

// Run schedules while ctx lives (scheduler.Scheduler.Run).
func (e *Engine) Run(ctx context.Context) error { return e.Scheduler.Run(ctx) }
