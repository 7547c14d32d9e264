package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/watch"
)

// failingAfter is how many failed runs in a row make a "watch failing" notice.
const failingAfter = 3

type runSlot struct {
	done   chan struct{}
	rec    RunRecord
	cancel context.CancelCauseFunc
}

// errRunCancelled is the cause of a run cancelled on request (Cancel), as
// opposed to one stopped because this replica stopped owning scheduling.
var errRunCancelled = errors.New("run cancelled on request")

func (m *Manager) isRunning(id string) bool {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	_, ok := m.running[id]
	return ok
}

// startRun starts a run of task id unless one is already going, and
// returns its slot. One run at a time per task. A scheduled run (from the
// loop's plan) happens only while the task is still active; a requested
// one (RunNow) was checked by its caller.
func (m *Manager) startRun(ctx context.Context, id string, kind wakeKind, scheduled bool) *runSlot {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if s, ok := m.running[id]; ok {
		return s
	}
	s, rctx := newRunSlot(ctx)
	m.running[id] = s
	go func() {
		defer s.cancel(nil)
		s.rec = m.run(rctx, id, kind, scheduled)
		m.endRun(id, s)
	}()
	return s
}

// newRunSlot is a new run's slot and the context the run goes under.
func newRunSlot(ctx context.Context) (*runSlot, context.Context) {
	rctx, cancel := context.WithCancelCause(ctx)
	return &runSlot{done: make(chan struct{}), cancel: cancel}, rctx
}

func (m *Manager) waitRuns() {
	for {
		m.runMu.Lock()
		var s *runSlot
		for _, v := range m.running {
			s = v
			break
		}
		m.runMu.Unlock()
		if s == nil {
			return
		}
		<-s.done
	}
}

// RunNow checks a task now and returns the run's record. Only the
// scheduling owner runs tasks.
func (m *Manager) RunNow(ctx context.Context, who, id string) (RunRecord, error) {
	t, err := m.Get(ctx, id)
	if err != nil {
		return RunRecord{}, err
	}
	if !m.mayManage(who, t) {
		return RunRecord{}, userErr(ErrForbidden, "only the task's owner or an admin can run it",
			"只有任务的创建者或管理员可以运行它。")
	}
	if t.State != Active && t.State != Errored && t.State != Paused {
		return RunRecord{}, userErr(ErrState, "task %s is %s", "任务 %s 当前为“%s”，不能运行。", t.ID, StateText(t.State))
	}
	if t.State != Active { // running a stopped task is resuming it once: recheck the scope (I8)
		if err := m.Policy().checkScope(t); err != nil {
			return RunRecord{}, err
		}
	}
	owner := m.runContext(t.ID)
	if owner == nil {
		return RunRecord{}, userErr(ErrNotOwner, "this herald does not own scheduling right now; try again shortly",
			"现在无法运行，请稍后再试。")
	}
	s := m.startRun(owner, t.ID, wakeCheck, false)
	select {
	case <-s.done:
		return s.rec, nil
	case <-ctx.Done():
		return RunRecord{}, ctx.Err()
	}
}

// Cancel cancels a task's run in progress (I9). It reports whether one was running.
func (m *Manager) Cancel(id string) bool {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	for _, cand := range candidateIDs(strings.TrimSpace(id)) {
		if s, ok := m.running[cand]; ok {
			s.cancel(errRunCancelled)
			return true
		}
	}
	return false
}

// session returns the one-slot semaphore of t's source session
// (host+credential): one run at a time per session (I7).
func (m *Manager) session(t *Task) chan struct{} {
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
	key := host + "|" + hex.EncodeToString(h.Sum(nil)[:8])
	m.runMu.Lock()
	defer m.runMu.Unlock()
	sem, ok := m.sessions[key]
	if !ok {
		sem = make(chan struct{}, 1)
		m.sessions[key] = sem
	}
	return sem
}

// run performs one run: fetch (with I6 retries), diff, and one atomic
// commit of snapshot + claims carrying the captured revision and epoch (I5).
func (m *Manager) run(ctx context.Context, id string, kind wakeKind, scheduled bool) RunRecord {
	start := m.clock.Now()
	rec := RunRecord{ID: "run-" + randomID(4), TaskID: id, Start: start}
	t, err := m.Get(ctx, id)
	if err != nil {
		rec.Outcome, rec.Error = OutcomeFailed, err.Error()
		if ctx.Err() != nil {
			rec.Outcome, rec.Class, rec.Error = OutcomeCancelled, watch.Cancelled, ""
		}
		return rec
	}
	if scheduled && t.State != Active {
		// Paused, deleted or finished after it was planned: the commit
		// would carry this very revision, so refuse here.
		rec.Outcome, rec.Reason = OutcomeRejected, "task is "+stateWord(t.State)
		return rec
	}
	fence := m.fenceFor(id)
	limits := m.Policy().Limits
	if fence.IsZero() {
		rec.Outcome, rec.Reason = OutcomeRejected, "not the scheduling owner"
		return rec
	}

	// The source session is taken before a slot of the global cap: a run
	// waiting for a busy session must not hold a slot other sources need
	// (I7), and both waits end when the run is cancelled (I9).
	sess := m.session(t)
	select {
	case sess <- struct{}{}:
		defer func() { <-sess }()
	case <-ctx.Done():
		rec.Outcome, rec.Class = OutcomeCancelled, watch.Cancelled
		return m.finish(ctx, fence, t, rec, kind)
	}
	leave, err := m.enterHost(ctx, t.Source.URL, limits)
	if err != nil {
		rec.Outcome, rec.Class = OutcomeCancelled, watch.Cancelled
		return m.finish(ctx, fence, t, rec, kind)
	}
	defer leave()
	if err := m.runs.acquire(ctx); err != nil {
		rec.Outcome, rec.Class = OutcomeCancelled, watch.Cancelled
		return m.finish(ctx, fence, t, rec, kind)
	}
	defer m.runs.release()

	var prev *watch.Snapshot
	if b, err := m.store.Snapshots().Get(ctx, t.ID); err == nil {
		prev, err = watch.DecodeSnapshot(b)
		if err != nil {
			m.log.Error().Str("task", t.ID).Err(err).Msg("unreadable snapshot; taking a new baseline")
			prev = nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		rec.Outcome, rec.Class, rec.Error = OutcomeFailed, watch.Transient, "store: "+err.Error()
		return m.finish(ctx, fence, t, rec, kind)
	}

	if kind == wakeRemind && prev == nil {
		kind = wakeCheck // nothing to remind from: read the source
	}
	opts := t.diffOptions(limits)
	now := m.clock.Now()
	var diff watch.Diff
	var listed []watch.Item // what the source listed, when it was read
	if kind == wakeRemind {
		diff = watch.Reminders(prev, now, opts)
	} else {
		res, attempts, err := m.fetch(ctx, t, prev)
		rec.Attempts = attempts
		if err != nil {
			rec.Outcome, rec.Class, rec.Error = OutcomeFailed, watch.ClassOf(err), err.Error()
			return m.finish(ctx, fence, t, rec, kind) // cancelled, if that is why
		}
		now = m.clock.Now()
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
	}
	rec.New, rec.Changed, rec.Removed, rec.Deadline = diff.Counts.New, diff.Counts.Changed, diff.Counts.Removed, diff.Counts.Deadline
	rec.Deferred = diff.Deferred

	effects, err := eventEffects(t, rec.ID, diff.Events, now)
	if err != nil {
		rec.Outcome, rec.Error = OutcomeFailed, err.Error()
		return m.finish(ctx, fence, t, rec, kind)
	}
	downloads, later, err := m.downloadEffects(ctx, t, listed, now, limits)
	if err != nil {
		rec.Outcome, rec.Class, rec.Error = OutcomeFailed, watch.Transient, err.Error()
		return m.finish(ctx, fence, t, rec, kind)
	}
	effects = append(effects, downloads...)
	rec.Downloads, rec.Deferred = len(downloads), rec.Deferred+later
	switch {
	case diff.Suspect:
		rec.Outcome = OutcomeSuspect
		if !t.Suspect {
			title, text := m.say(ctx, t, noticeSuspect, t.displayName(), t.ID)
			fx, err := noticeEffect(t, "suspect|"+rec.ID, title, text, now)
			if err == nil {
				effects = append(effects, fx)
			}
		}
	case diff.Baseline:
		rec.Outcome = OutcomeBaseline
		if !m.watching.collapsed(t.ID) { // else one message for many (watching.go)
			title, text := m.say(ctx, t, noticeBaseline, t.displayName(), len(diff.Next.Items))
			effects = append(effects, noticesTo(t, t.Notify, "baseline|"+t.Source.URL, title, text, now)...)
		}
	case len(diff.Events) == 0:
		rec.Outcome = OutcomeUnchanged
	default:
		rec.Outcome = OutcomeOK
	}
	// Only a run that read the source ends a failing streak: one
	// "recovered" notice per streak.
	if kind == wakeCheck && t.FailingRun != "" {
		title, text := m.say(ctx, t, noticeRecovered, t.displayName())
		if fx, err := noticeEffect(t, "recovered|"+t.FailingRun, title, text, now); err == nil {
			effects = append(effects, fx)
		}
	}

	if ctx.Err() != nil { // I9: a cancelled run commits nothing
		rec.Outcome, rec.Class = OutcomeCancelled, watch.Cancelled
		return m.finish(ctx, fence, t, rec, kind)
	}
	var snap []byte
	if diff.Next != nil && !diff.Suspect {
		if snap, err = diff.Next.Encode(); err != nil {
			rec.Outcome, rec.Error = OutcomeFailed, err.Error()
			return m.finish(ctx, fence, t, rec, kind)
		}
	}
	res, err := m.store.Ledger().Commit(ctx, store.RunCommit{
		Fence: fence, TaskID: t.ID, TaskRevision: t.Revision, Snapshot: snap, Effects: effects,
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		rec.Outcome, rec.Reason = OutcomeRejected, "the task changed during the run; nothing was committed"
		return m.finish(ctx, fence, t, rec, kind)
	case errors.Is(err, store.ErrStaleEpoch):
		m.relinquish(fence)
		rec.Outcome, rec.Reason = OutcomeRejected, "another replica took over scheduling; nothing was committed"
		return m.finish(ctx, fence, t, rec, kind)
	case err != nil:
		rec.Outcome, rec.Class, rec.Error = OutcomeFailed, watch.Transient, "store: "+err.Error()
		return m.finish(ctx, fence, t, rec, kind)
	}
	rec.Effects = len(res.Claimed)
	if len(res.Claimed) > 0 {
		m.wakeDelivery()
	}
	if len(t.RemindBefore) > 0 {
		kept := prev
		if snap != nil {
			kept = diff.Next
		}
		at, _ := watch.NextWake(kept, m.clock.Now(), opts)
		rec.remindAt = &at
	}
	if diff.Baseline {
		m.baselineDone(ctx, t, true, len(diff.Next.Items))
	}
	return m.finish(ctx, fence, t, rec, kind)
}

// fetch reads the source, retrying transient failures (I6): at most 3
// attempts, waiting 1 s then 2 s on the manager's clock.
func (m *Manager) fetch(ctx context.Context, t *Task, prev *watch.Snapshot) (watch.Result, int, error) {
	var src Source
	var err error
	if so, ok := m.o.Sources.(ScopedOpener); ok && t.Grant != nil {
		src, err = so.OpenScoped(t.Source, m.o.Zone, Scope{Host: t.Grant.Host, PathPrefix: t.Grant.PathPrefix})
	} else {
		src, err = m.o.Sources.Open(t.Source, m.o.Zone)
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
		if !watch.ClassOf(err).Retryable() || attempts > len(m.o.RetryWaits) {
			return res, attempts, err
		}
		select {
		case <-ctx.Done():
			return res, attempts, watch.Classify(watch.Cancelled, ctx.Err())
		case <-m.clock.After(m.o.RetryWaits[attempts-1]):
		}
	}
}

// finish records the run in the history and the task's run state, handles
// the failing/recovered notices, and plans the next check. fence is the
// epoch the run was admitted under: a notice it decides commits under the
// same fence, so a replica that lost ownership admits nothing (I5).
func (m *Manager) finish(ctx context.Context, fence store.Fence, t *Task, rec RunRecord, kind wakeKind) RunRecord {
	if rec.Outcome == OutcomeFailed && ctx.Err() != nil {
		// A store read or write cut short by the stop (or a Cancel) is
		// no failure of the source: the run was cancelled (I4, I9).
		rec.Outcome, rec.Class, rec.Error = OutcomeCancelled, watch.Cancelled, ""
	}
	end := m.clock.Now()
	rec.Duration = end.Sub(rec.Start)
	wctx := context.WithoutCancel(ctx)
	if kind == wakeCheck && rec.Outcome != OutcomeBaseline {
		m.baselineDone(wctx, t, false, 0) // no longer expected
	}
	failed := rec.Outcome == OutcomeFailed
	// Only a check reads the source; a reminder wake says nothing about
	// the source's health or a pending mass change.
	checked := kind == wakeCheck
	notify := false
	updated, err := m.update(wctx, t.ID, func(cur *Task) error {
		if cur.State == Deleted {
			return errSkip
		}
		notify = false
		cur.LastOutcome = rec.Outcome
		cur.LastError = ""
		if rec.remindAt != nil {
			cur.NextRemind = rec.remindAt
		}
		if failed {
			cur.LastError = string(rec.Class)
		}
		if checked { // an every schedule counts from the end of the last check
			cur.LastRunEnd = end
		}
		sched, serr := schedule.Parse(cur.Schedule, m.o.Zone)
		var next time.Time
		if serr == nil {
			next, serr = sched.Next(end)
		}
		final := errors.Is(serr, schedule.ErrNoMore)
		switch rec.Outcome {
		case OutcomeRejected:
			cur.NextRun = time.Time{} // not the owner: the owner plans from the schedule
			if m.owns(fence) {
				// The task changed during the run and nothing was
				// committed: check it again now.
				cur.NextRun = end
			}
			return nil
		case OutcomeCancelled:
			if !errors.Is(context.Cause(ctx), errRunCancelled) {
				// Stopped by shutdown or lost ownership, not by a person:
				// the check is still owed, once (I4).
				cur.NextRun = end
				return nil
			}
			cur.NextRun = time.Time{} // plan from the schedule again
			if final && cur.State == Active {
				cur.State = Errored // the one run of an `at` task did not happen
				cur.LastError = string(watch.Cancelled)
			}
			return nil
		}
		if checked {
			if failed {
				cur.Failures++
				// A rejected credential will not heal by waiting: the
				// owner is told at once, and once per streak.
				notify = (cur.Failures >= failingAfter || rec.Class == watch.Auth) && cur.FailingRun == ""
			} else {
				cur.Failures, cur.FailingRun = 0, ""
				cur.Suspect = rec.Outcome == OutcomeSuspect
			}
			cur.NextRun = time.Time{}
			switch {
			case final && failed:
				if cur.State == Active {
					cur.State = Errored // resume or run it to try again
				}
			case final:
				cur.State = Done
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
	if err != nil && !errors.Is(err, errSkip) {
		m.log.Error().Str("task", t.ID).Err(err).Msg("cannot record run state")
	}
	if notify && updated != nil && !fence.IsZero() {
		m.notifyFailing(wctx, fence, updated, rec, end)
	}
	m.appendRun(wctx, rec)
	if m.o.Observe != nil {
		m.o.Observe(t.Source.Kind, rec)
	}
	ev := m.log.Info()
	if failed {
		ev = m.log.Warn().Str("class", string(rec.Class))
	}
	ev.Str("task", t.ID).Str("outcome", rec.Outcome).Int("items", rec.Items).Int("effects", rec.Effects).Dur("took", rec.Duration).Msg("run finished")
	m.signal(t.ID, "run")
	return rec
}

// notifyFailing claims the one "watch failing" notice of a streak under
// the run's fence, and marks the streak notified only once it is claimed.
func (m *Manager) notifyFailing(ctx context.Context, fence store.Fence, t *Task, rec RunRecord, now time.Time) {
	title, text := m.say(ctx, t, noticeFailing, t.displayName(), t.Failures, rec.Class)
	fx, err := noticeEffect(t, "failing|"+rec.ID, title, text, now)
	if err != nil {
		return
	}
	if _, err := m.store.Ledger().Commit(ctx, store.RunCommit{Fence: fence, TaskID: t.ID, Effects: []store.Effect{fx}}); err != nil {
		m.log.Warn().Str("task", t.ID).Err(err).Msg("failing notice not admitted")
		return
	}
	m.wakeDelivery()
	_, err = m.update(ctx, t.ID, func(cur *Task) error {
		if cur.State == Deleted || cur.Failures == 0 || cur.FailingRun != "" {
			return errSkip
		}
		cur.FailingRun = rec.ID
		return nil
	})
	if err != nil && !errors.Is(err, errSkip) {
		m.log.Error().Str("task", t.ID).Err(err).Msg("cannot record the failing notice")
	}
}

func (m *Manager) appendRun(ctx context.Context, rec RunRecord) {
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	if err := m.store.Runs().Append(ctx, rec.TaskID, b, m.Policy().Limits.HistoryRuns); err != nil {
		m.log.Error().Str("task", rec.TaskID).Err(err).Msg("cannot record run history")
	}
}

// Rebaseline accepts the current state of a suspect task as its new
// baseline without pushing anything (owner or admin).
func (m *Manager) Rebaseline(ctx context.Context, who, id string) (*Task, error) {
	t, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !m.mayManage(who, t) {
		return nil, userErr(ErrForbidden, "only the task's owner or an admin can do that", "只有任务的创建者或管理员可以这样做。")
	}
	switch t.State {
	case Active:
	case Paused, Errored: // reading the source again is resuming it once (I8)
		if err := m.Policy().checkScope(t); err != nil {
			return nil, err
		}
	default:
		return nil, userErr(ErrState, "task %s is %s", "任务 %s 当前为“%s”，不能这样做。", t.ID, StateText(t.State))
	}
	// A snapshot is written only under the scheduling owner's fence (I5).
	fence := m.fenceFor(t.ID)
	if fence.IsZero() {
		return nil, userErr(ErrNotOwner, "this herald does not own scheduling right now; try again shortly",
			"现在无法处理，请稍后再试。")
	}
	var prev *watch.Snapshot
	if b, err := m.store.Snapshots().Get(ctx, t.ID); err == nil {
		prev, _ = watch.DecodeSnapshot(b)
	}
	res, _, err := m.fetch(ctx, t, nil)
	if err != nil {
		return nil, userErr(ErrInvalid, "the source could not be read (%s)", "无法读取来源（%s）。", watch.ClassOf(err))
	}
	next := watch.Rebaseline(prev, res.Items, m.clock.Now())
	next.Validators = res.Validators
	b, err := next.Encode()
	if err != nil {
		return nil, err
	}
	if _, err := m.store.Ledger().Commit(ctx, store.RunCommit{Fence: fence, TaskID: t.ID, TaskRevision: t.Revision, Snapshot: b}); err != nil {
		return nil, fmt.Errorf("rebaseline: %w", err)
	}
	return m.update(ctx, t.ID, func(cur *Task) error { cur.Suspect, cur.NextRemind = false, nil; return nil })
}
