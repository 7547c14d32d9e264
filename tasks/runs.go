package tasks

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/herald-bridge/herald/tasks/watch"
)

// ErrUnreadable is a source that could not be read when a person asked
// for it (Rebaseline); it wraps the classified error.
var ErrUnreadable = errors.New("source could not be read")

// RunNow checks a task now and returns the run's record. Only the
// scheduling owner runs tasks.
func (m *Manager) RunNow(ctx context.Context, who, id string) (RunRecord, error) {
	t, err := m.Get(ctx, id)
	if err != nil {
		return RunRecord{}, err
	}
	if !m.mayManage(who, t) {
		return RunRecord{}, userErr(ErrForbidden, "run_forbidden", "only the task's owner or an admin can run it")
	}
	if t.State != Active && t.State != Errored && t.State != Paused {
		return RunRecord{}, userErr(ErrState, "cannot_run", "task %s is %s", t.ID, StateText(t.State))
	}
	if t.State != Active { // running a stopped task is resuming it once: recheck the scope (I8)
		if err := m.Policy().checkScope(t); err != nil {
			return RunRecord{}, err
		}
	}
	var rec RunRecord
	err = ErrNotOwner
	if r := m.scheduler(); r != nil {
		rec, err = r.RunNow(ctx, t.ID)
	}
	if errors.Is(err, ErrNotOwner) {
		return RunRecord{}, userErr(ErrNotOwner, "run_not_owner", "this herald does not own scheduling right now; try again shortly")
	}
	return rec, err
}

// Rebaseline accepts the current state of a suspect task as its new
// baseline without pushing anything (owner or admin).
func (m *Manager) Rebaseline(ctx context.Context, who, id string) (*Task, error) {
	t, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !m.mayManage(who, t) {
		return nil, userErr(ErrForbidden, "owner_or_admin", "only the task's owner or an admin can do that")
	}
	switch t.State {
	case Active:
	case Paused, Errored: // reading the source again is resuming it once (I8)
		if err := m.Policy().checkScope(t); err != nil {
			return nil, err
		}
	default:
		return nil, userErr(ErrState, "state_forbids", "task %s is %s", t.ID, StateText(t.State))
	}
	// A snapshot is written only under the scheduling owner's fence (I5).
	err = ErrNotOwner
	if r := m.scheduler(); r != nil {
		err = r.Rebaseline(ctx, t)
	}
	switch {
	case errors.Is(err, ErrNotOwner):
		return nil, userErr(ErrNotOwner, "not_owner", "this herald does not own scheduling right now; try again shortly")
	case errors.Is(err, ErrUnreadable):
		return nil, userErr(ErrInvalid, "source_unreadable", "the source could not be read (%s)", watch.ClassOf(err))
	case err != nil:
		return nil, err
	}
	return m.Update(ctx, t.ID, func(cur *Task) error { cur.Suspect, cur.NextRemind = false, nil; return nil })
}

// RecordRun appends rec to its task's bounded run history.
func (m *Manager) RecordRun(ctx context.Context, rec RunRecord) {
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	if err := m.store.Runs().Append(ctx, rec.TaskID, b, m.Policy().Limits.HistoryRuns); err != nil {
		m.log.Error().Str("task", rec.TaskID).Err(err).Msg("cannot record run history")
	}
}
