package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// Get returns a task by task id ("t-…") or request id ("r-…").
//
// A request id names its task: "r-7f3a" is task "t-7f3a", and for a task
// declared in config, "r-campus-news" is task "campus-news".
func (m *Manager) Get(ctx context.Context, id string) (*Task, error) {
	typed := strings.TrimSpace(id)
	for _, cand := range CandidateIDs(typed) {
		rec, err := m.store.Catalog().Get(ctx, cand)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read task: %w", err)
		}
		return decodeTask(rec.Value, rec.Revision)
	}
	return nil, userErr(ErrNotFound, "no_such_task", "there is no task or request %s", typed)
}

// taskID returns the task id that id names (see Get), or id itself.
func (m *Manager) taskID(ctx context.Context, id string) string {
	if t, err := m.Get(ctx, id); err == nil {
		return t.ID
	}
	return strings.TrimSpace(id)
}

// CandidateIDs are the ids id may name: a request id names its task.
func CandidateIDs(id string) []string {
	if rest, ok := strings.CutPrefix(id, "r-"); ok && rest != "" {
		return []string{id, "t-" + rest, rest}
	}
	return []string{id}
}

// List returns the tasks visible to who (admins: all), not deleted. A
// person's own list decodes only their tasks in full, however many
// tasks others have.
func (m *Manager) List(ctx context.Context, who string) ([]*Task, error) {
	admin := m.Policy().IsAdmin(who) || who == ""
	recs, err := m.store.Catalog().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	var out []*Task
	for _, r := range recs {
		var f countFields
		if err := json.Unmarshal(r.Value, &f); err != nil || f.State == Deleted || (!admin && f.Owner != who) {
			continue
		}
		t, err := decodeTask(r.Value, r.Revision)
		if err != nil {
			m.log.Error().Str("task", r.ID).Err(err).Msg("skipping unreadable task record")
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Task) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// All returns every task record, deleted ones included (the scheduler
// plans from it).
func (m *Manager) All(ctx context.Context) ([]*Task, error) {
	recs, err := m.store.Catalog().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	out := make([]*Task, 0, len(recs))
	for _, r := range recs {
		t, err := decodeTask(r.Value, r.Revision)
		if err != nil {
			m.log.Error().Str("task", r.ID).Err(err).Msg("skipping unreadable task record")
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// Runs returns a task's newest runs.
func (m *Manager) Runs(ctx context.Context, id string, limit int) ([]RunRecord, error) {
	raw, err := m.store.Runs().List(ctx, m.taskID(ctx, id), limit)
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	out := make([]RunRecord, 0, len(raw))
	for _, b := range raw {
		var r RunRecord
		if err := json.Unmarshal(b, &r); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Effects returns a task's (or hook's) ledger entries, newest first.
func (m *Manager) Effects(ctx context.Context, source string, limit int) ([]store.Effect, error) {
	return m.store.Ledger().List(ctx, m.taskID(ctx, source), limit)
}

// Redeliver makes a new recorded attempt of an ended effect on the same
// key (an explicit human replay, recorded with who); an effect sent in a
// grouped message goes again with that whole message (delivery.Redeliver).
func (m *Manager) Redeliver(ctx context.Context, who, key string) (store.Effect, error) {
	fx, err := m.store.Ledger().Get(ctx, key)
	if err != nil {
		return fx, fmt.Errorf("redeliver: %w", err)
	}
	if t, err := m.Get(ctx, fx.TaskID); err == nil {
		if !m.mayManage(who, t) {
			return fx, userErr(ErrForbidden, "redeliver_forbidden", "only the task's owner or an admin can redeliver its effects")
		}
	} else if !m.Policy().IsAdmin(who) && who != "" {
		return fx, userErr(ErrForbidden, "redeliver_admin_only", "only an admin can redeliver this effect")
	}
	fx, _, err = delivery.Redeliver(ctx, m.store.Ledger(), key, who, m.clock.Now())
	if err != nil {
		return fx, fmt.Errorf("redeliver: %w", err)
	}
	m.o.WakeDelivery()
	return fx, nil
}
