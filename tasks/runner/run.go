// Package runner does one run of one task: fetch its source, compare
// what it lists with the stored snapshot, and commit the new snapshot and
// the effects it owes in one fenced step (I1, I5). It holds no scheduling
// state: the scheduler (tasks/scheduler) decides when, and hands it a
// Job with the fence and a way to ask whether it still owns the task.
package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

// FailingAfter is how many failed runs in a row make a "watch failing" notice.
const FailingAfter = 3

// Catalog is what a run reads and records of its task (tasks.Manager).
type Catalog interface {
	Get(ctx context.Context, id string) (*tasks.Task, error)
	Policy() tasks.Policy
	Update(ctx context.Context, id string, fn func(t *tasks.Task) error) (*tasks.Task, error)
	Signal(id, what string)
	RecordRun(ctx context.Context, rec tasks.RunRecord)
}

var _ Catalog = (*tasks.Manager)(nil)

// Options configure a Runner.
type Options struct {
	Store   store.Store
	Catalog Catalog
	Sources tasks.SourceOpener
	Clock   tasks.Clock    // default tasks.RealClock
	Zone    *time.Location // default zone for schedules; default UTC
	Log     zerolog.Logger
	// RetryWaits are the waits between source attempts (I6); default 1 s, 2 s.
	RetryWaits []time.Duration
	// WakeDelivery is called after effects were queued.
	WakeDelivery func()
	// Observe, when set, hears of every run recorded in a task's history,
	// with the task's source kind ("" when detected) (metrics).
	Observe func(kind string, r tasks.RunRecord)
}

// Runner runs jobs; see the package comment.
type Runner struct {
	o     Options
	store store.Store
	cat   Catalog
	clock tasks.Clock
	log   zerolog.Logger
}

var _ scheduler.Runner = (*Runner)(nil)

// New returns a Runner.
func New(o Options) (*Runner, error) {
	if o.Store == nil || o.Catalog == nil || o.Sources == nil {
		return nil, errors.New("runner: Options.Store, Catalog and Sources are required")
	}
	if o.Clock == nil {
		o.Clock = tasks.RealClock{}
	}
	if o.Zone == nil {
		o.Zone = time.UTC
	}
	if o.RetryWaits == nil {
		o.RetryWaits = []time.Duration{time.Second, 2 * time.Second}
	}
	if o.WakeDelivery == nil {
		o.WakeDelivery = func() {}
	}
	return &Runner{o: o, store: o.Store, cat: o.Catalog, clock: o.Clock, log: o.Log}, nil
}

// job is one run in progress: the job and what the run learned that
// the task's record keeps.
type job struct {
	scheduler.Job
	// sourceTitle is the source's own title as this run read it, for
	// the task record (Task.SourceTitle); "" when it gave none.
	sourceTitle string
	// remindAt is the committed snapshot's next reminder instant, for
	// the task record (Task.NextRemind); nil when nothing was committed.
	remindAt *time.Time
}

// Run performs one run: fetch (with I6 retries), diff, and one atomic
// commit of snapshot + claims carrying the captured revision and epoch (I5).
func (r *Runner) Run(ctx context.Context, sj scheduler.Job) tasks.RunRecord {
	j := &job{Job: sj}
	return r.run(ctx, j)
}

func (r *Runner) run(ctx context.Context, j *job) tasks.RunRecord {
	id, kind := j.TaskID, j.Due
	start := r.clock.Now()
	rec := tasks.RunRecord{ID: "run-" + tasks.RandomID(4), TaskID: id, Start: start}
	t, err := r.cat.Get(ctx, id)
	if err != nil {
		rec.Outcome, rec.Error = tasks.OutcomeFailed, err.Error()
		if ctx.Err() != nil {
			rec.Outcome, rec.Class, rec.Error = tasks.OutcomeCancelled, watch.Cancelled, ""
		}
		return rec
	}
	if j.Scheduled && t.State != tasks.Active {
		// Paused, deleted or finished after it was planned: the commit
		// would carry this very revision, so refuse here.
		rec.Outcome, rec.Reason = tasks.OutcomeRejected, "task is "+tasks.StateText(t.State).En
		return rec
	}
	fence := j.Fence
	limits := r.cat.Policy().Limits
	if fence.IsZero() {
		rec.Outcome, rec.Reason = tasks.OutcomeRejected, "not the scheduling owner"
		return rec
	}

	leave, err := j.Owner.Enter(ctx, t)
	if err != nil {
		rec.Outcome, rec.Class = tasks.OutcomeCancelled, watch.Cancelled
		return r.finish(ctx, j, t, rec)
	}
	defer leave()

	var prev *watch.Snapshot
	if b, err := r.store.Snapshots().Get(ctx, t.ID); err == nil {
		prev, err = watch.DecodeSnapshot(b)
		if err != nil {
			r.log.Error().Str("task", t.ID).Err(err).Msg("unreadable snapshot; taking a new baseline")
			prev = nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		rec.Outcome, rec.Class, rec.Error = tasks.OutcomeFailed, watch.Transient, "store: "+err.Error()
		return r.finish(ctx, j, t, rec)
	}

	if kind == scheduler.Remind && prev == nil {
		kind = scheduler.Check // nothing to remind from: read the source
	}
	opts := t.DiffOptions(limits)
	now := r.clock.Now()
	var diff watch.Diff
	var listed []watch.Item // what the source listed, when it was read
	if kind == scheduler.Remind {
		diff = watch.Reminders(prev, now, opts)
	} else {
		res, attempts, err := r.fetch(ctx, t, prev)
		rec.Attempts = attempts
		if err != nil {
			rec.Outcome, rec.Class, rec.Error = tasks.OutcomeFailed, watch.ClassOf(err), err.Error()
			return r.finish(ctx, j, t, rec) // cancelled, if that is why
		}
		now = r.clock.Now()
		if res.NotModified && prev != nil {
			diff = watch.Reminders(prev, now, opts)
		} else {
			diff = watch.Compute(prev, res.Items, now, opts)
		}
		// A suspect run keeps the previous snapshot untouched, validators
		// included, so the next check sees the same change again.
		if diff.Next != nil && !res.NotModified && !diff.Suspect {
			diff.Next.Validators = res.Validators
		}
		rec.Items, rec.Skipped, rec.Selector = len(res.Items), res.Skipped, res.Selector
		if !res.NotModified && !diff.Suspect {
			listed = res.Items
		}
		if res.NotModified && prev != nil {
			rec.Items = len(prev.Items)
		}
		j.noticeContent(t, res, &diff)
	}
	rec.New, rec.Changed, rec.Removed, rec.Deadline = diff.Counts.New, diff.Counts.Changed, diff.Counts.Removed, diff.Counts.Deadline
	rec.Deferred = diff.Deferred

	effects, err := eventEffects(t, rec.ID, diff.Events, now)
	if err != nil {
		rec.Outcome, rec.Error = tasks.OutcomeFailed, err.Error()
		return r.finish(ctx, j, t, rec)
	}
	downloads, later, err := r.downloadEffects(ctx, t, listed, now, limits)
	if err != nil {
		rec.Outcome, rec.Class, rec.Error = tasks.OutcomeFailed, watch.Transient, err.Error()
		return r.finish(ctx, j, t, rec)
	}
	effects = append(effects, downloads...)
	rec.Downloads, rec.Deferred = len(downloads), rec.Deferred+later
	switch {
	case diff.Suspect:
		rec.Outcome = tasks.OutcomeSuspect
		if !t.Suspect {
			title, text := tasks.Say(ctx, r.store, t, tasks.NoticeSuspect, t.DisplayName(), t.ID)
			fx, err := tasks.NoticeEffect(t, "suspect|"+rec.ID, title, text, now)
			if err == nil {
				effects = append(effects, fx)
			}
		}
	case diff.Baseline:
		rec.Outcome = tasks.OutcomeBaseline
		if !j.Owner.Baselines().Collapsed(t.ID) { // else one message for many (watching.go)
			title, text := tasks.Say(ctx, r.store, t, tasks.NoticeBaseline, t.DisplayName(), len(diff.Next.Items))
			effects = append(effects, tasks.NoticesTo(t, t.Notify, "baseline|"+t.Source.URL, title, text, now)...)
		}
	case len(diff.Events) == 0:
		rec.Outcome = tasks.OutcomeUnchanged
	default:
		rec.Outcome = tasks.OutcomeOK
	}
	// Only a run that read the source ends a failing streak: one
	// "recovered" notice per streak.
	if kind == scheduler.Check && t.FailingRun != "" {
		title, text := tasks.Say(ctx, r.store, t, tasks.NoticeRecovered, t.DisplayName())
		if fx, err := tasks.NoticeEffect(t, "recovered|"+t.FailingRun, title, text, now); err == nil {
			effects = append(effects, fx)
		}
	}

	if ctx.Err() != nil { // I9: a cancelled run commits nothing
		rec.Outcome, rec.Class = tasks.OutcomeCancelled, watch.Cancelled
		return r.finish(ctx, j, t, rec)
	}
	var snap []byte
	if diff.Next != nil && !diff.Suspect {
		if snap, err = diff.Next.Encode(); err != nil {
			rec.Outcome, rec.Error = tasks.OutcomeFailed, err.Error()
			return r.finish(ctx, j, t, rec)
		}
	}
	res, err := r.store.Ledger().Commit(ctx, store.RunCommit{
		Fence: fence, TaskID: t.ID, TaskRevision: t.Revision, Snapshot: snap, Effects: effects,
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		rec.Outcome, rec.Reason = tasks.OutcomeRejected, "the task changed during the run; nothing was committed"
		return r.finish(ctx, j, t, rec)
	case errors.Is(err, store.ErrStaleEpoch):
		j.Owner.Relinquish(fence)
		rec.Outcome, rec.Reason = tasks.OutcomeRejected, "another replica took over scheduling; nothing was committed"
		return r.finish(ctx, j, t, rec)
	case err != nil:
		rec.Outcome, rec.Class, rec.Error = tasks.OutcomeFailed, watch.Transient, "store: "+err.Error()
		return r.finish(ctx, j, t, rec)
	}
	rec.Effects = len(res.Claimed)
	if len(res.Claimed) > 0 {
		r.o.WakeDelivery()
	}
	if len(t.RemindBefore) > 0 {
		kept := prev
		if snap != nil {
			kept = diff.Next
		}
		at, _ := watch.NextWake(kept, r.clock.Now(), opts)
		j.remindAt = &at
	}
	if diff.Baseline {
		j.Owner.Baselines().Done(ctx, t, true, len(diff.Next.Items))
	}
	return r.finish(ctx, j, t, rec)
}

// fetch reads the source, retrying transient failures (I6): at most 3
// attempts, waiting 1 s then 2 s on the runner's clock.
func (r *Runner) fetch(ctx context.Context, t *tasks.Task, prev *watch.Snapshot) (watch.Result, int, error) {
	var src tasks.Source
	var err error
	if so, ok := r.o.Sources.(tasks.ScopedOpener); ok && t.Grant != nil {
		src, err = so.OpenScoped(t.Source, r.o.Zone, tasks.Scope{Host: t.Grant.Host, PathPrefix: t.Grant.PathPrefix})
	} else {
		src, err = r.o.Sources.Open(t.Source, r.o.Zone)
	}
	if err != nil {
		return watch.Result{}, 0, watch.Classify(watch.Schema, err)
	}
	var cond watch.Conditional
	if prev != nil {
		cond = prev.Validators
	}
	attempts := 0
	for {
		attempts++
		res, err := src.Fetch(ctx, cond)
		if err == nil {
			return res, attempts, nil
		}
		if ctx.Err() != nil {
			return res, attempts, watch.Classify(watch.Cancelled, ctx.Err())
		}
		if !watch.ClassOf(err).Retryable() || attempts > len(r.o.RetryWaits) {
			return res, attempts, err
		}
		select {
		case <-ctx.Done():
			return res, attempts, watch.Classify(watch.Cancelled, ctx.Err())
		case <-r.clock.After(r.o.RetryWaits[attempts-1]):
		}
	}
}

// finish records the run in the history and the task's run state, handles
// the failing/recovered notices, and plans the next check. fence is the
// epoch the run was admitted under: a notice it decides commits under the
// same fence, so a replica that lost ownership admits nothing (I5).
func (r *Runner) finish(ctx context.Context, j *job, t *tasks.Task, rec tasks.RunRecord) tasks.RunRecord {
	fence, kind := j.Fence, j.Due
	if rec.Outcome == tasks.OutcomeFailed && (ctx.Err() != nil || r.lapsed(context.WithoutCancel(ctx), j)) {
		// A store read or write cut short by the stop (or a Cancel), or a
		// run whose lease lapsed under it (its host's network stalled, say,
		// before the scheduler saw the lapse and cancelled it), is no
		// failure of the source: the run was cancelled, the check is still
		// owed to whoever owns the task now, and the failing streak does
		// not grow (I4, I5, I9).
		rec.Outcome, rec.Class, rec.Error = tasks.OutcomeCancelled, watch.Cancelled, ""
	}
	end := r.clock.Now()
	rec.Duration = end.Sub(rec.Start)
	wctx := context.WithoutCancel(ctx)
	if kind == scheduler.Check && rec.Outcome != tasks.OutcomeBaseline {
		j.Owner.Baselines().Done(wctx, t, false, 0) // no longer expected
	}
	failed := rec.Outcome == tasks.OutcomeFailed
	// Only a check reads the source; a reminder wake says nothing about
	// the source's health or a pending mass change.
	checked := kind == scheduler.Check
	notify := false
	updated, err := r.cat.Update(wctx, t.ID, func(cur *tasks.Task) error {
		if cur.State == tasks.Deleted {
			return tasks.ErrSkip
		}
		notify = false
		cur.LastOutcome = rec.Outcome
		cur.LastError = ""
		if j.remindAt != nil {
			cur.NextRemind = j.remindAt
		}
		if j.sourceTitle != "" {
			cur.SourceTitle = j.sourceTitle
		}
		if failed {
			cur.LastError = string(rec.Class)
		}
		if checked { // an every schedule counts from the end of the last check
			cur.LastRunEnd = end
		}
		sched, serr := schedule.Parse(cur.Schedule, r.o.Zone)
		var next time.Time
		if serr == nil {
			next, serr = sched.Next(end)
		}
		final := errors.Is(serr, schedule.ErrNoMore)
		switch rec.Outcome {
		case tasks.OutcomeRejected:
			cur.NextRun = time.Time{} // not the owner: the owner plans from the schedule
			if j.Owner.Owns(fence) {
				// The task changed during the run and nothing was
				// committed: check it again now.
				cur.NextRun = end
			}
			return nil
		case tasks.OutcomeCancelled:
			if !errors.Is(context.Cause(ctx), scheduler.ErrRunCancelled) {
				// Stopped by shutdown or lost ownership, not by a person:
				// the check is still owed, once (I4).
				cur.NextRun = end
				return nil
			}
			cur.NextRun = time.Time{} // plan from the schedule again
			if final && cur.State == tasks.Active {
				cur.State = tasks.Errored // the one run of an `at` task did not happen
				cur.LastError = string(watch.Cancelled)
			}
			return nil
		}
		if checked {
			if failed {
				cur.Failures++
				// A rejected credential will not heal by waiting: the
				// owner is told at once, and once per streak.
				notify = (cur.Failures >= FailingAfter || rec.Class == watch.Auth) && cur.FailingRun == ""
			} else {
				cur.Failures, cur.FailingRun = 0, ""
				cur.Suspect = rec.Outcome == tasks.OutcomeSuspect
			}
			cur.NextRun = time.Time{}
			switch {
			case final && failed:
				if cur.State == tasks.Active {
					cur.State = tasks.Errored // resume or run it to try again
				}
			case final:
				cur.State = tasks.Done
			case serr == nil:
				cur.NextRun = next
				// Events left over by the per-run bound (I7) go out
				// soon, not a whole interval later.
				if soon := end.Add(time.Minute); rec.Deferred > 0 && soon.Before(next) {
					cur.NextRun = soon
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, tasks.ErrSkip) {
		r.log.Error().Str("task", t.ID).Err(err).Msg("cannot record run state")
	}
	if notify && updated != nil && !fence.IsZero() {
		r.notifyFailing(wctx, fence, updated, rec, end)
	}
	r.cat.RecordRun(wctx, rec)
	if r.o.Observe != nil {
		r.o.Observe(t.Source.Kind, rec)
	}
	ev := r.log.Info()
	if failed {
		ev = r.log.Warn().Str("class", string(rec.Class))
	}
	ev.Str("task", t.ID).Str("outcome", rec.Outcome).Int("items", rec.Items).Int("effects", rec.Effects).Dur("took", rec.Duration).Msg("run finished")
	r.cat.Signal(t.ID, "run")
	return rec
}

// lapsed reports whether the lease j's run was admitted under is gone:
// the scheduler no longer holds it, or the store says it ran out, was
// given up or was taken over. A lease's expiry is read on the clock the
// store stamps leases with (the runner's, real time outside tests). A
// store that cannot say leaves the run as it ended.
func (r *Runner) lapsed(ctx context.Context, j *job) bool {
	if j.Fence.IsZero() {
		return false
	}
	if !j.Owner.Owns(j.Fence) {
		return true
	}
	l, err := r.store.Leases().Current(ctx, j.Fence.Lease)
	if err != nil {
		return errors.Is(err, store.ErrNotFound)
	}
	return l.Holder == "" || l.Epoch != j.Fence.Epoch || !l.Expires.IsZero() && !r.clock.Now().Before(l.Expires)
}

// notifyFailing claims the one "watch failing" notice of a streak under
// the run's fence, and marks the streak notified only once it is claimed.
func (r *Runner) notifyFailing(ctx context.Context, fence store.Fence, t *tasks.Task, rec tasks.RunRecord, now time.Time) {
	title, text := tasks.Say(ctx, r.store, t, tasks.NoticeFailing, t.DisplayName(), t.Failures, rec.Class)
	fx, err := tasks.NoticeEffect(t, "failing|"+rec.ID, title, text, now)
	if err != nil {
		return
	}
	if _, err := r.store.Ledger().Commit(ctx, store.RunCommit{Fence: fence, TaskID: t.ID, Effects: []store.Effect{fx}}); err != nil {
		r.log.Warn().Str("task", t.ID).Err(err).Msg("failing notice not admitted")
		return
	}
	r.o.WakeDelivery()
	_, err = r.cat.Update(ctx, t.ID, func(cur *tasks.Task) error {
		if cur.State == tasks.Deleted || cur.Failures == 0 || cur.FailingRun != "" {
			return tasks.ErrSkip
		}
		cur.FailingRun = rec.ID
		return nil
	})
	if err != nil && !errors.Is(err, tasks.ErrSkip) {
		r.log.Error().Str("task", t.ID).Err(err).Msg("cannot record the failing notice")
	}
}

// Rebaseline reads t's source and commits what it lists as t's new
// snapshot under fence, without pushing anything (the catalog checked
// who may, and records the task's side).
func (r *Runner) Rebaseline(ctx context.Context, t *tasks.Task, fence store.Fence) error {
	var prev *watch.Snapshot
	if b, err := r.store.Snapshots().Get(ctx, t.ID); err == nil {
		prev, _ = watch.DecodeSnapshot(b)
	}
	res, _, err := r.fetch(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", tasks.ErrUnreadable, err)
	}
	next := watch.Rebaseline(prev, res.Items, r.clock.Now())
	next.Validators = res.Validators
	b, err := next.Encode()
	if err != nil {
		return err
	}
	if _, err := r.store.Ledger().Commit(ctx, store.RunCommit{Fence: fence, TaskID: t.ID, TaskRevision: t.Revision, Snapshot: b}); err != nil {
		return fmt.Errorf("rebaseline: %w", err)
	}
	return nil
}
