package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// Runner does one run of a task for the scheduler: fetch, compare,
// commit (tasks/runner). It holds no scheduling state: what it needs of
// scheduling comes with the job.
type Runner interface {
	Run(ctx context.Context, j Job) tasks.RunRecord
	// Rebaseline reads t's source and commits what it lists as t's
	// snapshot under fence, pushing nothing.
	Rebaseline(ctx context.Context, t *tasks.Task, fence store.Fence) error
}

// Due is what a wake-up is for.
type Due int

const (
	// Check reads the source.
	Check Due = iota
	// Remind sends the reminders due from the stored snapshot.
	Remind
)

// Job is one run the scheduler hands a runner.
type Job struct {
	TaskID string
	Due    Due
	// Scheduled: from the plan, so it runs only while the task is still
	// active; a requested run (RunNow) was checked by its caller.
	Scheduled bool
	// Fence is the shard's fence the run's commits carry (I5); zero when
	// this replica does not own the task.
	Fence store.Fence
	// Owner answers for the scheduler while the job runs.
	Owner Owner
}

// Owner is the scheduler's side of a running job.
type Owner interface {
	// Owns reports whether f is still the fence of a shard this replica
	// holds.
	Owns(f store.Fence) bool
	// Relinquish stops owning f's shard at once: a commit under it was
	// refused as stale.
	Relinquish(f store.Fence)
	// Enter waits for t's turn to read its source: its source session,
	// its host's cap and rate, and the global cap on runs (I7). The
	// returned func gives them back; on ctx's end it waits no longer (I9).
	Enter(ctx context.Context, t *tasks.Task) (leave func(), err error)
	// Baselines are the collapsed baseline confirmations of a start-up.
	Baselines() Baselines
	// Hold keeps every check of rawURL's host back until until (its
	// Retry-After); HostHeld reports such a hold (SPEC §18).
	Hold(rawURL string, until time.Time)
	HostHeld(rawURL string) (time.Time, bool)
}

// Baselines collapses the baseline confirmations of the tasks owed their
// first run at a start-up into one message per recipient.
type Baselines interface {
	// Collapsed reports whether task id's confirmation goes into a
	// collapsed message rather than its own.
	Collapsed(id string) bool
	// Done records t's first run (baseline: its baseline was committed
	// with items) and sends the messages now complete.
	Done(ctx context.Context, t *tasks.Task, baseline bool, items int)
}

// ErrRunCancelled is the cause of a run cancelled on request (Cancel), as
// opposed to one stopped because this replica stopped owning scheduling.
var ErrRunCancelled = errors.New("run cancelled on request")
