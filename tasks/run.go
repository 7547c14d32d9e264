package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
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
	cancel context.CancelFunc
}

func (m *Manager) isRunning(id string) bool {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	_, ok := m.running[id]
	return ok
}

// startRun starts a run of task id unless one is already going, and
// returns its slot. One run at a time per task.
func (m *Manager) startRun(ctx context.Context, id string, kind wakeKind, _ chan struct{}) *runSlot {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if s, ok := m.running[id]; ok {
		return s
	}
	rctx, cancel := context.WithCancel(ctx)
	s := &runSlot{done: make(chan struct{}), cancel: cancel}
	m.running[id] = s
	go func() {
		defer cancel()
		s.rec = m.runTask(rctx, id, kind)
		m.runMu.Lock()
		delete(m.running, id)
		m.runMu.Unlock()
		close(s.done)
		m.touch(id) // re-plan
	}()
	return s
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
		return RunRecord{}, userErr(ErrForbidden, "only the task's owner or an admin can run it")
	}
	if t.State != Active && t.State != Errored && t.State != Paused {
		return RunRecord{}, userErr(ErrState, "task %s is %s", t.ID, stateWord(t.State))
	}
	m.mu.Lock()
	owner := m.ownerCtx
	m.mu.Unlock()
	if owner == nil {
		return RunRecord{}, userErr(ErrNotOwner, "this herald does not own scheduling right now; try again shortly")
	}
	s := m.startRun(owner, t.ID, wakeCheck, nil)
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
	if s, ok := m.running[normalizeID(id)]; ok {
		s.cancel()
		return true
	}
	return false
}

func (m *Manager) session(t *Task) *sync.Mutex {
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
	key := host + "|" + hex.EncodeToString(h.Sum(nil)[:8])
	m.runMu.Lock()
	defer m.runMu.Unlock()
	mu, ok := m.sessions[key]
	if !ok {
		mu = &sync.Mutex{}
		m.sessions[key] = mu
	}
	return mu
}

// runTask performs one run: fetch (with I6 retries), diff, and one atomic
// commit of snapshot + claims carrying the captured revision and epoch (I5).
func (m *Manager) runTask(ctx context.Context, id string, kind wakeKind) RunRecord {
	start := m.clock.Now()
	rec := RunRecord{ID: "run-" + randomID(4), TaskID: id, Start: start}
	t, err := m.Get(ctx, id)
	if err != nil {
		rec.Outcome, rec.Error = OutcomeFailed, err.Error()
		return rec
	}
	m.mu.Lock()
	fence := m.fence
	limits := m.policy.Limits
	m.mu.Unlock()
	if fence.IsZero() {
		rec.Outcome, rec.Reason = OutcomeRejected, "not the scheduling owner"
		return rec
	}

	select { // global concurrency cap
	case m.sem <- struct{}{}:
		defer func() { <-m.sem }()
	case <-ctx.Done():
		rec.Outcome, rec.Class = OutcomeCancelled, watch.Cancelled
		return m.finish(ctx, t, rec, kind)
	}
	sess := m.session(t) // one run at a time per source session (I7)
	sess.Lock()
	defer sess.Unlock()

	var prev *watch.Snapshot
	if b, err := m.store.Snapshots().Get(ctx, t.ID); err == nil {
		prev, err = watch.DecodeSnapshot(b)
		if err != nil {
			m.log.Error().Str("task", t.ID).Err(err).Msg("unreadable snapshot; taking a new baseline")
			prev = nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		rec.Outcome, rec.Class, rec.Error = OutcomeFailed, watch.Transient, "store: "+err.Error()
		return m.finish(ctx, t, rec, kind)
	}

	opts := t.diffOptions(limits)
	now := m.clock.Now()
	var diff watch.Diff
	if kind == wakeRemind && prev != nil {
		diff = watch.Reminders(prev, now, opts)
	} else {
		res, attempts, err := m.fetch(ctx, t, prev)
		rec.Attempts = attempts
		if err != nil {
			rec.Outcome, rec.Class, rec.Error = OutcomeFailed, watch.ClassOf(err), err.Error()
			if ctx.Err() != nil {
				rec.Outcome, rec.Class = OutcomeCancelled, watch.Cancelled
			}
			return m.finish(ctx, t, rec, kind)
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
		rec.Items = len(res.Items)
		if res.NotModified && prev != nil {
			rec.Items = len(prev.Items)
		}
	}
	rec.New, rec.Changed, rec.Removed, rec.Deadline = diff.Counts.New, diff.Counts.Changed, diff.Counts.Removed, diff.Counts.Deadline
	rec.Deferred = diff.Deferred

	effects, err := eventEffects(t, rec.ID, diff.Events, now)
	if err != nil {
		rec.Outcome, rec.Error = OutcomeFailed, err.Error()
		return m.finish(ctx, t, rec, kind)
	}
	switch {
	case diff.Suspect:
		rec.Outcome = OutcomeSuspect
		if !t.Suspect {
			title, text := t.say(noticeSuspect, t.displayName(), t.ID)
			fx, err := noticeEffect(t, "suspect|"+rec.ID, title, text, now)
			if err == nil {
				effects = append(effects, fx)
			}
		}
	case diff.Baseline:
		rec.Outcome = OutcomeBaseline
		title, text := t.say(noticeBaseline, t.displayName(), len(diff.Next.Items))
		fx, err := noticeEffect(t, "baseline", title, text, now)
		if err == nil {
			effects = append(effects, fx)
		}
	case len(diff.Events) == 0:
		rec.Outcome = OutcomeUnchanged
	default:
		rec.Outcome = OutcomeOK
	}
	if t.FailingRun != "" { // the streak is over: one "recovered" notice
		title, text := t.say(noticeRecovered, t.displayName())
		if fx, err := noticeEffect(t, "recovered|"+t.FailingRun, title, text, now); err == nil {
			effects = append(effects, fx)
		}
	}

	if ctx.Err() != nil { // I9: a cancelled run commits nothing
		rec.Outcome, rec.Class = OutcomeCancelled, watch.Cancelled
		return m.finish(ctx, t, rec, kind)
	}
	var snap []byte
	if diff.Next != nil && !diff.Suspect {
		if snap, err = diff.Next.Encode(); err != nil {
			rec.Outcome, rec.Error = OutcomeFailed, err.Error()
			return m.finish(ctx, t, rec, kind)
		}
	}
	res, err := m.store.Ledger().Commit(ctx, store.RunCommit{
		Fence: fence, TaskID: t.ID, TaskRevision: t.Revision, Snapshot: snap, Effects: effects,
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		rec.Outcome, rec.Reason = OutcomeRejected, "the task changed during the run; nothing was committed"
		return m.finish(ctx, t, rec, kind)
	case errors.Is(err, store.ErrStaleEpoch):
		rec.Outcome, rec.Reason = OutcomeRejected, "another replica took over scheduling; nothing was committed"
		return m.finish(ctx, t, rec, kind)
	case err != nil:
		rec.Outcome, rec.Class, rec.Error = OutcomeFailed, watch.Transient, "store: "+err.Error()
		return m.finish(ctx, t, rec, kind)
	}
	rec.Effects = len(res.Claimed)
	if len(res.Claimed) > 0 {
		m.wakeDelivery()
	}
	return m.finish(ctx, t, rec, kind)
}

// fetch reads the source, retrying transient failures (I6): at most 3
// attempts, waiting 1 s then 2 s on the manager's clock.
func (m *Manager) fetch(ctx context.Context, t *Task, prev *watch.Snapshot) (watch.Result, int, error) {
	src, err := m.o.Sources.Open(t.Source, m.o.Zone)
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
// the failing/recovered notices, and plans the next check.
func (m *Manager) finish(ctx context.Context, t *Task, rec RunRecord, kind wakeKind) RunRecord {
	end := m.clock.Now()
	rec.Duration = end.Sub(rec.Start)
	if ctx.Err() != nil && rec.Outcome != OutcomeCancelled {
		ctx = context.WithoutCancel(ctx)
	}
	wctx := context.WithoutCancel(ctx)
	failed := rec.Outcome == OutcomeFailed
	var notice *store.Effect
	updated, err := m.update(wctx, t.ID, func(cur *Task) error {
		if cur.State == Deleted {
			return errSkip
		}
		cur.LastOutcome = rec.Outcome
		cur.LastError = ""
		if failed {
			cur.LastError = string(rec.Class)
		}
		if kind == wakeCheck || rec.Outcome != OutcomeOK {
			cur.LastRunEnd = end
		}
		if rec.Outcome == OutcomeRejected || rec.Outcome == OutcomeCancelled {
			cur.NextRun = time.Time{} // plan from the schedule again
			return nil
		}
		if failed {
			cur.Failures++
			if cur.Failures >= failingAfter && cur.FailingRun == "" {
				cur.FailingRun = rec.ID
				title, text := cur.say(noticeFailing, cur.displayName(), cur.Failures, rec.Class)
				fx, err := noticeEffect(cur, "failing|"+rec.ID, title, text, end)
				if err == nil {
					notice = &fx
				}
			}
		} else {
			cur.Failures, cur.FailingRun = 0, ""
		}
		cur.Suspect = rec.Outcome == OutcomeSuspect
		if kind == wakeCheck {
			cur.NextRun = time.Time{}
			sched, err := schedule.Parse(cur.Schedule, m.o.Zone)
			if err == nil {
				next, err := sched.Next(end)
				switch {
				case errors.Is(err, schedule.ErrNoMore):
					if !failed {
						cur.State = Done
					}
				case err == nil:
					cur.NextRun = next
					// Events left over by the per-run bound (I7) go out
					// soon, not a whole interval later.
					if soon := end.Add(time.Minute); rec.Deferred > 0 && soon.Before(next) {
						cur.NextRun = soon
					}
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errSkip) {
		m.log.Error().Str("task", t.ID).Err(err).Msg("cannot record run state")
	}
	if notice != nil && updated != nil {
		m.mu.Lock()
		fence := m.fence
		m.mu.Unlock()
		if _, err := m.store.Ledger().Commit(wctx, store.RunCommit{Fence: fence, TaskID: t.ID, Effects: []store.Effect{*notice}}); err == nil {
			m.wakeDelivery()
		}
	}
	m.appendRun(wctx, rec)
	ev := m.log.Info()
	if failed {
		ev = m.log.Warn().Str("class", string(rec.Class))
	}
	ev.Str("task", t.ID).Str("outcome", rec.Outcome).Int("items", rec.Items).Int("effects", rec.Effects).Dur("took", rec.Duration).Msg("run finished")
	m.signal(t.ID, "run")
	return rec
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
		return nil, userErr(ErrForbidden, "only the task's owner or an admin can do that")
	}
	var prev *watch.Snapshot
	if b, err := m.store.Snapshots().Get(ctx, t.ID); err == nil {
		prev, _ = watch.DecodeSnapshot(b)
	}
	res, _, err := m.fetch(ctx, t, nil)
	if err != nil {
		return nil, userErr(ErrInvalid, "the source could not be read (%s)", watch.ClassOf(err))
	}
	next := watch.Rebaseline(prev, res.Items, m.clock.Now())
	next.Validators = res.Validators
	b, err := next.Encode()
	if err != nil {
		return nil, err
	}
	if _, err := m.store.Ledger().Commit(ctx, store.RunCommit{TaskID: t.ID, TaskRevision: t.Revision, Snapshot: b}); err != nil {
		return nil, fmt.Errorf("rebaseline: %w", err)
	}
	return m.update(ctx, t.ID, func(cur *Task) error { cur.Suspect = false; return nil })
}

// Declared is a task declared in the config file: approved by the file.
type Declared struct {
	ID, Name     string
	Source       watch.Spec
	Schedule     string
	RemindBefore []time.Duration
	Notify       []string
	Include      []string
	Exclude      []string
	Owner        string
}

// SetDeclared makes the catalog match the config file's tasks: new ones
// are created active, edited ones updated (their revision grows), removed
// ones deleted.
func (m *Manager) SetDeclared(ctx context.Context, decls []Declared) error {
	all, err := m.all(ctx)
	if err != nil {
		return err
	}
	byID := map[string]*Task{}
	for _, t := range all {
		byID[t.ID] = t
	}
	now := m.clock.Now()
	seen := map[string]bool{}
	var errs []error
	for _, d := range decls {
		seen[d.ID] = true
		cur, ok := byID[d.ID]
		if ok && cur.Origin != OriginConfig {
			errs = append(errs, fmt.Errorf("config task %s: id already used by a chat task", d.ID))
			continue
		}
		want := func(t *Task) {
			t.Name, t.Source, t.Schedule, t.RemindBefore = d.Name, d.Source, d.Schedule, d.RemindBefore
			t.Notify, t.Include, t.Exclude, t.Owner = slices.Clone(d.Notify), d.Include, d.Exclude, d.Owner
		}
		if !ok {
			t := &Task{ID: d.ID, Origin: OriginConfig, CreatedAt: now, UpdatedAt: now,
				Request: Request{ID: "r-" + strings.TrimPrefix(d.ID, "t-"), By: "config", At: now, Via: "config"}}
			want(t)
			if err := m.approveInto(t, "config", "config", true, now); err != nil {
				errs = append(errs, fmt.Errorf("config task %s: %w", d.ID, err))
				continue
			}
			b, _ := encodeTask(t)
			if _, err := m.store.Catalog().Put(ctx, store.Fence{}, t.ID, 0, b); err != nil {
				errs = append(errs, fmt.Errorf("config task %s: %w", d.ID, err))
				continue
			}
			m.signal(t.ID, "approved")
			continue
		}
		probe := *cur
		want(&probe)
		same, _ := json.Marshal(cur)
		changed, _ := json.Marshal(&probe)
		if string(same) == string(changed) && cur.State != Deleted {
			continue
		}
		_, err := m.update(ctx, d.ID, func(t *Task) error {
			want(t)
			g, err := grantFor(t, "config", "config")
			if err != nil {
				return err
			}
			g.At = now
			t.Grant = g
			if t.State == Deleted {
				t.State, t.NextRun = Active, now
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("config task %s: %w", d.ID, err))
			continue
		}
		m.signal(d.ID, "updated")
	}
	for _, t := range all {
		if t.Origin == OriginConfig && !seen[t.ID] && t.State != Deleted {
			if _, err := m.Delete(ctx, "", t.ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
