package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store"
)

// liveCount is how many live tasks there are in all and how many chat
// tasks owner has: what the I7 bounds count.
type liveCount struct{ total, owner int }

// countFields is the part of a task record the bounds look at; decoding
// only it keeps a count over many tasks cheap.
type countFields struct {
	Owner  string `json:"owner"`
	Origin string `json:"origin"`
	State  State  `json:"state"`
}

func countLive(ctx context.Context, cat store.Catalog, owner string) (liveCount, error) {
	recs, err := cat.List(ctx)
	if err != nil {
		return liveCount{}, fmt.Errorf("count tasks: %w", err)
	}
	var n liveCount
	for _, r := range recs {
		var f countFields
		if err := json.Unmarshal(r.Value, &f); err != nil {
			continue // unreadable: skipped as everywhere else
		}
		if f.State == Deleted || f.State == Rejected {
			continue
		}
		n.total++
		// Config-declared tasks are the file's: they count toward the
		// total, not toward their owner's own bound.
		if f.Owner == owner && f.Origin != OriginConfig {
			n.owner++
		}
	}
	return n, nil
}

// CreateLease is the lease under which a replica counts the live tasks
// and creates one, so that the task limit holds across replicas (I7).
const CreateLease = "task-create"

// createLeaseTTL bounds how long a replica that dies while creating a task
// keeps the others from creating one. Counting and one catalog write take
// far less; a holder that stalls past it cannot write (see createWithinLimit).
const createLeaseTTL = 5 * time.Second

// createWaits are the waits between attempts to take CreateLease while
// another replica holds it: about 3 s in all, then the request is refused
// with a plain "try again" rather than left hanging.
var createWaits = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond,
	160 * time.Millisecond, 320 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
	500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
}

// createWithinLimit stores t as a new task unless the live tasks already
// reach limit (I7). Counting and storing are one step across replicas: both
// happen while this replica holds CreateLease, and the catalog write is
// fenced with the lease's epoch. A replica that stalled past the lease's
// lifetime while another took it over (and may have counted and created in
// between) has its write refused as stale, and counts again.
//
// The write is fenced by CreateLease, not by the scheduler lease: any
// replica takes requests, owner or not, so the scheduler's fence would
// refuse them on every other replica, and what must not interleave with
// this count is another replica's count, which only CreateLease orders.
// Updates of existing tasks stay unfenced revision compare-and-swaps: none
// of them turns a task that is not counted into one that is.
func (m *Manager) createWithinLimit(ctx context.Context, t *Task, limits Limits, now time.Time) error {
	// Acquire renews a lease its holder already holds, so the lease alone
	// does not order this replica's own requests: m.create does.
	if err := m.lockCreate(ctx); err != nil {
		return err
	}
	defer func() { <-m.create }()
	for range 3 {
		lease, err := takeCreateLease(ctx, m.store.Leases(), m.o.Holder, m.clock)
		if err != nil {
			return err
		}
		f := store.Fence{Lease: lease.Name, Epoch: lease.Epoch}
		n, err := countLive(ctx, m.store.Catalog(), t.Owner)
		if err == nil {
			err = limitErr(n, limits)
		}
		if err == nil {
			err = m.createTask(ctx, f, t, now)
		}
		releaseCreateLease(ctx, m.store.Leases(), lease, m.log)
		if errors.Is(err, store.ErrStaleEpoch) {
			continue // another replica took the lease over meanwhile: count again
		}
		return err
	}
	return busyErr()
}

// limitErr says which bound a new task would pass, with the numbers, or nil.
func limitErr(n liveCount, l Limits) error {
	if n.owner >= l.MaxTasksPerOwner {
		return userErr(ErrLimit, "owner_task_limit", "your tasks are at the limit for one person: %d of %d; delete one first",
			n.owner, l.MaxTasksPerOwner)
	}
	if n.total >= l.MaxTasks {
		return userErr(ErrLimit, "task_limit", "herald's tasks are at their limit in all: %d of %d; ask an admin to delete some first",
			n.total, l.MaxTasks)
	}
	return nil
}

// takeCreateLease takes CreateLease, waiting while another replica holds it.
func takeCreateLease(ctx context.Context, leases store.Leases, holder string, clock Clock) (store.Lease, error) {
	for i := 0; ; i++ {
		l, err := leases.Acquire(ctx, CreateLease, holder, createLeaseTTL)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, store.ErrLeaseHeld) {
			return store.Lease{}, fmt.Errorf("take the task-create lease: %w", err)
		}
		if i == len(createWaits) {
			return store.Lease{}, busyErr()
		}
		select {
		case <-ctx.Done():
			return store.Lease{}, ctx.Err()
		case <-clock.After(createWaits[i]):
		}
	}
}

// releaseCreateLease gives CreateLease up even when ctx has ended, so the
// next request need not wait for it to expire.
func releaseCreateLease(ctx context.Context, leases store.Leases, l store.Lease, log zerolog.Logger) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := leases.Release(rctx, l); err != nil {
		log.Warn().Err(err).Msg("cannot release the task-create lease; it expires on its own")
	}
}

func busyErr() error {
	return userErr(ErrBusy, "busy", "herald is busy with other new tasks; try again in a moment")
}

// createTask stores t under a new id, with its write fenced by f.
func (m *Manager) createTask(ctx context.Context, f store.Fence, t *Task, now time.Time) error {
	for range 5 {
		id := RandomID(3)
		t.ID, t.Request = "t-"+id, Request{ID: "r-" + id, By: t.Owner, At: now, Via: t.ReplyTo, Name: t.Request.Name}
		b, err := encodeTask(t)
		if err != nil {
			return err
		}
		rev, err := m.store.Catalog().Put(ctx, f, t.ID, 0, b)
		if errors.Is(err, store.ErrConflict) {
			continue // id taken: draw another
		}
		if err != nil {
			return fmt.Errorf("store task: %w", err)
		}
		t.Revision = rev
		return nil
	}
	return errors.New("could not allocate a task id")
}
