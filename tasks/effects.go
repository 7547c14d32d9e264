package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/watch"
)

// EffectKey is the claim-once key of one effect: a stable hash of
// (task id, event identity, recipient) (I1).
func EffectKey(taskID, identity, recipient string) string {
	h := sha256.New()
	h.Write([]byte(taskID))
	h.Write([]byte{0})
	h.Write([]byte(identity))
	h.Write([]byte{0})
	h.Write([]byte(recipient))
	return "fx_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// ChangeTTL is how long a change notice stays worth sending.
const ChangeTTL = 24 * time.Hour

// Admission asks the manager to claim effects that do not come from a
// watch run: inbound hooks, test pushes, notices. It is the same claim
// mechanism as runs, so I1 holds everywhere.
type Admission struct {
	Source     string // task id, "hook:<name>", "test:<who>"
	Identity   string // event identity: delivery id, notice id
	Recipients []string
	Message    delivery.Message
	TTL        time.Duration // 0: ChangeTTL
}

// Admit claims one effect per recipient for a and queues them. A repeated
// identity claims nothing (CommitResult.Duplicates).
func (m *Manager) Admit(ctx context.Context, a Admission) (store.CommitResult, error) {
	if a.Source == "" || a.Identity == "" || len(a.Recipients) == 0 {
		return store.CommitResult{}, fmt.Errorf("admit: %w: source, identity and recipients are required", ErrInvalid)
	}
	now := m.clock.Now()
	if a.Message.OccurredAt.IsZero() {
		a.Message.OccurredAt = now
	}
	ttl := a.TTL
	if ttl <= 0 {
		ttl = ChangeTTL
	}
	payload, err := json.Marshal(a.Message)
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("admit: encode message: %w", err)
	}
	run := a.Source + "/" + a.Identity
	effects := make([]store.Effect, 0, len(a.Recipients))
	for _, r := range a.Recipients {
		effects = append(effects, store.Effect{
			Key: EffectKey(a.Source, a.Identity, r), TaskID: a.Source, Recipient: r,
			Kind: a.Message.Kind, Payload: payload, State: store.Pending,
			NotBefore: now, ExpiresAt: now.Add(ttl), CreatedAt: now, UpdatedAt: now, RunID: run,
		})
	}
	var worker string
	var release func()
	if m.o.Direct != nil && len(effects) == 1 {
		if w, rel, ok := m.o.Direct.Reserve(ctx, effects[0].Recipient, a.Source); ok {
			worker, release = w, rel
		}
	}
	res, err := m.store.Ledger().Commit(ctx, store.RunCommit{TaskID: a.Source, Effects: effects, Worker: worker})
	if worker != "" {
		if err != nil || len(res.Claimed) == 0 {
			release()
			if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrStaleEpoch) {
				// The answer may be lost rather than the write (a broken
				// connection): if the claim was stored in flight for the
				// worker, it must not stay there unsent.
				m.o.Direct.Unconfirmed(effects[0].Key)
			}
		} else {
			fx := effects[0]
			fx.InFlight, fx.Worker = true, worker
			fx.Attempts = []store.Attempt{{N: 1, Start: now, By: worker, Outcome: store.Pending}}
			m.o.Direct.Handoff([]store.Effect{fx}, a.Message, release)
			return res, nil
		}
	}
	if err != nil {
		return res, fmt.Errorf("admit: %w", err)
	}
	if len(res.Claimed) > 0 {
		m.wakeDelivery()
	}
	return res, nil
}

// eventEffects turns one run's events into effects: one per (event,
// recipient). Effects of one run for one recipient share RunID, so the
// dispatcher sends them as one message.
func eventEffects(t *Task, runID string, events []watch.Event, now time.Time) ([]store.Effect, error) {
	var out []store.Effect
	for _, ev := range events {
		kind := delivery.KindChanged
		change := string(ev.Kind)
		expires := now.Add(ChangeTTL)
		if ev.Kind == watch.EventKind(delivery.ChangeDeadline) {
			kind = delivery.KindDeadline
			if !ev.Item.Due.IsZero() {
				expires = ev.Item.Due
			}
		}
		msg := delivery.Message{
			Kind: kind, TaskID: t.ID, TaskName: t.displayName(), OccurredAt: now,
			Items: []delivery.Item{{ID: ev.Item.ID, Title: ev.Item.Title, URL: ev.Item.URL, Change: change, Due: ev.Item.Due,
				WasTitle: ev.WasTitle, WasDue: ev.WasDue}},
		}
		payload, err := json.Marshal(msg)
		if err != nil {
			return nil, fmt.Errorf("encode message: %w", err)
		}
		for _, r := range t.Notify {
			out = append(out, store.Effect{
				Key: EffectKey(t.ID, ev.Identity, r), TaskID: t.ID, Recipient: r, Kind: kind,
				Payload: payload, State: store.Pending, NotBefore: now, ExpiresAt: expires,
				CreatedAt: now, UpdatedAt: now, RunID: runID,
			})
		}
	}
	return out, nil
}

// noticeEffect is a task.state notice to the task's owner.
func noticeEffect(t *Task, identity, title, text string, now time.Time) (store.Effect, error) {
	fxs := noticesTo(t, []string{t.ownerAddress()}, identity, title, text, now)
	if len(fxs) == 0 {
		return store.Effect{}, errors.New("encode notice")
	}
	return fxs[0], nil
}

// noticesTo is a task.state notice to each of recipients.
func noticesTo(t *Task, recipients []string, identity, title, text string, now time.Time) []store.Effect {
	msg := delivery.Message{Kind: delivery.KindState, Title: title, Text: text, TaskID: t.ID, TaskName: t.displayName(), OccurredAt: now}
	payload, err := json.Marshal(msg)
	if err != nil {
		return nil
	}
	out := make([]store.Effect, 0, len(recipients))
	for _, to := range recipients {
		out = append(out, store.Effect{
			Key: EffectKey(t.ID, identity, to), TaskID: t.ID, Recipient: to, Kind: delivery.KindState,
			Payload: payload, State: store.Pending, NotBefore: now, ExpiresAt: now.Add(ChangeTTL),
			CreatedAt: now, UpdatedAt: now, RunID: t.ID + "/" + identity,
		})
	}
	return out
}

func (t *Task) displayName() string {
	if t.Name != "" {
		return t.Name
	}
	return t.ID
}

// ownerAddress is where notices for the owner go: the chat the request
// came from, else the owner's inbox.
func (t *Task) ownerAddress() string {
	if _, err := delivery.ParseAddress(t.ReplyTo); err == nil {
		return t.ReplyTo
	}
	return address.InboxOf(t.Owner)
}
