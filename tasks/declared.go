package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/watch"
)

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
	// NotifyRemoved and Template are the task's notice settings (SPEC §20).
	NotifyRemoved bool
	Template      string
}

// SetDeclared makes the catalog match the config file's tasks: new ones
// are created active, edited ones updated (their revision grows), removed
// ones deleted. New tasks are written in batches, not one disk sync each,
// and edits several at once, so a file of many tasks applies in seconds.
func (m *Manager) SetDeclared(ctx context.Context, decls []Declared) error {
	if err := m.lockCreate(ctx); err != nil {
		return err
	}
	defer func() { <-m.create }()
	all, err := m.All(ctx)
	if err != nil {
		return err
	}
	byID := make(map[string]*Task, len(all))
	for _, t := range all {
		byID[t.ID] = t
	}
	now := m.clock.Now()
	seen := make(map[string]bool, len(decls))
	var errs joinLocked
	var puts []store.CatalogPut
	var edits []Declared
	for _, d := range decls {
		seen[d.ID] = true
		cur, ok := byID[d.ID]
		if ok && cur.Origin != OriginConfig {
			errs.add(fmt.Errorf("config task %s: id already used by a chat task", d.ID))
			continue
		}
		if !ok {
			t := &Task{ID: d.ID, Origin: OriginConfig, CreatedAt: now, UpdatedAt: now,
				Request: Request{ID: "r-" + strings.TrimPrefix(d.ID, "t-"), By: "config", At: now, Via: "config"}}
			d.applyTo(t)
			if err := m.approveInto(t, "config", "config", true, now); err != nil {
				errs.add(fmt.Errorf("config task %s: %w", d.ID, err))
				continue
			}
			b, _ := encodeTask(t)
			puts = append(puts, store.CatalogPut{ID: t.ID, Value: b})
			continue
		}
		if d.matches(cur) && cur.State != Deleted {
			continue
		}
		edits = append(edits, d)
	}
	failed := putNew(ctx, m.store.Catalog(), puts)
	for _, p := range puts {
		if err, bad := failed[p.ID]; bad {
			errs.add(fmt.Errorf("config task %s: %w", p.ID, err))
			continue
		}
		m.Signal(p.ID, "approved")
	}
	eachAtOnce(len(edits), func(i int) {
		if err := m.editDeclared(ctx, edits[i], now); err != nil {
			errs.add(fmt.Errorf("config task %s: %w", edits[i].ID, err))
		}
	})
	var gone []string
	for _, t := range all {
		if t.Origin == OriginConfig && !seen[t.ID] && t.State != Deleted {
			gone = append(gone, t.ID)
		}
	}
	eachAtOnce(len(gone), func(i int) {
		if _, err := m.Delete(ctx, "", gone[i]); err != nil {
			errs.add(err)
		}
	})
	return errs.err()
}

// applyTo sets the fields the file declares.
func (d Declared) applyTo(t *Task) {
	t.Name, t.Source, t.Schedule, t.RemindBefore = d.Name, d.Source, d.Schedule, d.RemindBefore
	t.Notify, t.Include, t.Exclude, t.Owner = slices.Clone(d.Notify), d.Include, d.Exclude, d.Owner
	t.NotifyRemoved, t.Template = d.NotifyRemoved, d.Template
}

// matches reports whether t already has every field the file declares.
func (d Declared) matches(t *Task) bool {
	if t.Name != d.Name || t.Schedule != d.Schedule || t.Owner != d.Owner || !slices.Equal(t.RemindBefore, d.RemindBefore) ||
		!slices.Equal(t.Notify, d.Notify) || !slices.Equal(t.Include, d.Include) || !slices.Equal(t.Exclude, d.Exclude) ||
		t.NotifyRemoved != d.NotifyRemoved || t.Template != d.Template {
		return false
	}
	// As stored: an empty header map is no header map.
	a, _ := json.Marshal(t.Source)
	b, _ := json.Marshal(d.Source)
	return string(a) == string(b)
}

// editDeclared applies an edited declaration to its stored task.
func (m *Manager) editDeclared(ctx context.Context, d Declared, now time.Time) error {
	sourceChanged := false
	_, err := m.Update(ctx, d.ID, func(t *Task) error {
		oldSchedule, oldSource, oldRemind := t.Schedule, t.Source, t.RemindBefore
		d.applyTo(t)
		sourceChanged = !reflect.DeepEqual(oldSource, t.Source)
		if sourceChanged || !slices.Equal(oldRemind, t.RemindBefore) {
			t.NextRemind = nil // planned from the snapshot again
		}
		if t.Schedule != oldSchedule && t.State != Deleted {
			if err := replan(t, m.o.Zone, now); err != nil {
				return err
			}
		}
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
		return err
	}
	if sourceChanged { // a new source starts from a new baseline (I2), not a diff against the old one
		if _, err := m.store.Ledger().Commit(ctx, store.RunCommit{TaskID: d.ID, Snapshot: []byte{}}); err != nil {
			return fmt.Errorf("reset snapshot: %w", err)
		}
	}
	m.Signal(d.ID, "updated")
	return nil
}

// replan applies an edited schedule at once: the next check is measured
// from the end of the last run (or now, before the first), and a finished
// task whose new schedule has more runs becomes active again.
func replan(t *Task, zone *time.Location, now time.Time) error {
	sched, err := schedule.Parse(t.Schedule, zone)
	if err != nil {
		return userErr(ErrInvalid, "declared_bad_schedule", "the schedule %q cannot be read: %v", t.Schedule, err.Error())
	}
	if t.LastRunEnd.IsZero() {
		if t.State == Active {
			t.NextRun = now // the first run (the baseline) is still owed
		}
		return nil
	}
	next, err := sched.Next(t.LastRunEnd)
	switch {
	case errors.Is(err, schedule.ErrNoMore):
		t.NextRun = time.Time{}
		if t.State == Active {
			t.State = Done
		}
	case err != nil:
		return fmt.Errorf("schedule %q: %w", t.Schedule, err)
	default:
		t.NextRun = next
		if t.State == Done {
			t.State = Active
		}
	}
	return nil
}
