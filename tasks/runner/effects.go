package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/watch"
)

// eventEffects turns one run's events into effects: one per (event,
// recipient). Effects of one run for one recipient share RunID, so the
// dispatcher sends them as one message.
func eventEffects(t *tasks.Task, runID string, events []watch.Event, now time.Time) ([]store.Effect, error) {
	var out []store.Effect
	for _, ev := range events {
		kind := delivery.KindChanged
		change := string(ev.Kind)
		expires := now.Add(delivery.ChangeTTL)
		if ev.Kind == watch.EventKind(delivery.ChangeDeadline) {
			kind = delivery.KindDeadline
			if !ev.Item.Due.IsZero() {
				expires = ev.Item.Due
			}
		}
		msg := delivery.Message{
			Kind: kind, TaskID: t.ID, TaskName: t.DisplayName(), OccurredAt: now, Zone: taskZone(t, ev.Item.Due),
			Items: []delivery.Item{{ID: ev.Item.ID, Title: ev.Item.Title, URL: ev.Item.URL, Change: change, Due: ev.Item.Due,
				WasTitle: ev.WasTitle, WasDue: ev.WasDue}},
		}

		withContent(&msg, t, ev)
		payload, err := json.Marshal(msg)
		if err != nil {
			return nil, fmt.Errorf("encode message: %w", err)
		}
		for _, r := range t.Notify {
			out = append(out, store.Effect{
				Key: delivery.EffectKey(t.ID, ev.Identity, r), TaskID: t.ID, Recipient: r, Kind: kind,
				Payload: payload, State: store.Pending, NotBefore: now, ExpiresAt: expires,
				CreatedAt: now, UpdatedAt: now, RunID: runID,
			})
		}
	}
	return out, nil
}

// taskZone is the IANA zone a notice shows the task's times in: the
// deadline's own zone when the source named one (an iCalendar TZID), else
// the zone the task's schedule names, else "" (the recipient's zone).
func taskZone(t *tasks.Task, due time.Time) string {
	if name := due.Location().String(); strings.Contains(name, "/") {
		return name
	}
	if z := schedule.ZoneOf(t.Schedule); z != nil {
		return z.String()
	}
	return ""
}

// downloadEffects claims the downloads of one run: every listed file the
// task keeps whose version was never claimed, up to the per-run bound
// (I7). It returns the effects and how many files wait for a later run.
func (r *Runner) downloadEffects(ctx context.Context, t *tasks.Task, listed []watch.Item, now time.Time, limits tasks.Limits) ([]store.Effect, int, error) {
	d := t.Source.Download
	if d == nil {
		return nil, 0, nil
	}
	limit := limits.MaxItemsPerRun // the per-run bound is also the ceiling
	if d.MaxPerRun > 0 {
		limit = min(d.MaxPerRun, limit)
	}
	var files []*watch.File
	for _, it := range listed {
		if download.Wanted(d, it.File) {
			f := *it.File
			files = append(files, &f)
		}
	}
	download.Distinct(files)
	to := download.Recipient(t.ID)
	var out []store.Effect
	deferred := 0
	for _, f := range files {
		key := delivery.EffectKey(t.ID, download.Identity(f), to)
		if _, err := r.store.Ledger().Get(ctx, key); err == nil {
			continue // claimed before: written, or on its way
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, 0, fmt.Errorf("read the ledger: %w", err)
		}
		if len(out) >= limit {
			deferred++
			continue
		}
		msg, err := download.Message(t.ID, t.DisplayName(), f, now)
		if err != nil {
			return nil, 0, err
		}
		payload, err := json.Marshal(msg)
		if err != nil {
			return nil, 0, fmt.Errorf("encode download: %w", err)
		}
		// No expiry: a download waits until it is done, never dropped.
		out = append(out, store.Effect{
			Key: key, TaskID: t.ID, Recipient: to, Kind: download.Kind, Payload: payload,
			State: store.Pending, NotBefore: now, CreatedAt: now, UpdatedAt: now, RunID: key,
		})
	}
	return out, deferred, nil
}
