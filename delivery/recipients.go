package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/herald-bridge/herald/store"
)

// RecipientState is what herald knows of one recipient across replicas:
// whether it is disabled (SPEC §21) and how its deliveries went.
type RecipientState struct {
	Recipient string `json:"recipient"`
	// Disabled: its pushes end failed (recipient_disabled) unsent until
	// someone enables it again.
	Disabled   bool      `json:"disabled,omitempty"`
	DisabledAt time.Time `json:"disabled_at,omitzero"`
	Reason     string    `json:"reason,omitempty"` // why it was disabled (gone, blocked, no_success)
	// Generation counts the times it was enabled again: one disable
	// notice is sent per generation.
	Generation int `json:"generation,omitempty"`

	LastSuccess  time.Time `json:"last_success,omitzero"`
	FailingSince time.Time `json:"failing_since,omitzero"` // the first failed attempt after the last success
	Failures     int       `json:"failures,omitempty"`     // failed attempts since the last success
	LastError    string    `json:"last_error,omitempty"`
}

// Recipients keeps RecipientState for every replica. Implementations
// need no transaction: the disable switch and the delivery record are
// kept apart, so a count written from a stale read never turns a
// disable back.
type Recipients interface {
	Get(ctx context.Context, recipient string) (RecipientState, error)
	// Disable turns the recipient off; changed is false when it was off
	// already.
	Disable(ctx context.Context, recipient, reason string, now time.Time) (st RecipientState, changed bool, err error)
	// Enable turns it on again and starts a new generation; changed is
	// false when it was on.
	Enable(ctx context.Context, recipient string, now time.Time) (st RecipientState, changed bool, err error)
	// Attempted records one attempt's result: a success, or a failure
	// with its reason.
	Attempted(ctx context.Context, recipient string, ok bool, reason string, now time.Time) (RecipientState, error)
	// Disabled lists the recipients that are disabled now.
	Disabled(ctx context.Context) ([]RecipientState, error)
}

// KVRecipients keeps recipient states in a store KV (store.Channels()):
// per recipient a switch and a delivery record, and one list of the
// disabled ones, which the dispatcher reads instead of a switch per push.
type KVRecipients struct{ KV store.KV }

var _ Recipients = KVRecipients{}

// recipientSwitch is the disable switch of one recipient.
type recipientSwitch struct {
	Disabled   bool      `json:"disabled,omitempty"`
	DisabledAt time.Time `json:"disabled_at,omitzero"`
	Reason     string    `json:"reason,omitempty"`
	Generation int       `json:"generation,omitempty"`
}

// recipientRecord is how one recipient's deliveries went.
type recipientRecord struct {
	LastSuccess  time.Time `json:"last_success,omitzero"`
	FailingSince time.Time `json:"failing_since,omitzero"`
	Failures     int       `json:"failures,omitempty"`
	LastError    string    `json:"last_error,omitempty"`
}

func switchKey(r string) string { return "recipient/switch/" + r }
func recordKey(r string) string { return "recipient/record/" + r }

// disabledIndex lists the recipients that were disabled and not enabled
// since: the switches to read for Disabled.
const disabledIndex = "recipient/disabled"

// index adds r to (or, with out, drops it from) the disabled index.
func (k KVRecipients) index(ctx context.Context, r string, out bool) error {
	var names []string
	if err := getJSON(ctx, k.KV, disabledIndex, &names); err != nil {
		return err
	}
	i := slices.Index(names, r)
	switch {
	case out && i >= 0:
		names = slices.Delete(names, i, i+1)
	case !out && i < 0:
		names = append(names, r)
	default:
		return nil
	}
	return putJSON(ctx, k.KV, disabledIndex, names)
}

// Disabled implements Recipients.
func (k KVRecipients) Disabled(ctx context.Context) ([]RecipientState, error) {
	var names []string
	if err := getJSON(ctx, k.KV, disabledIndex, &names); err != nil {
		return nil, err
	}
	var out []RecipientState
	for _, r := range names {
		st, err := k.Get(ctx, r)
		if err != nil {
			return out, err
		}
		if st.Disabled {
			out = append(out, st)
		}
	}
	return out, nil
}

func getJSON(ctx context.Context, kv store.KV, key string, v any) error {
	raw, err := kv.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("recipient state %s: %w", key, err)
	}
	return nil
}

func putJSON(ctx context.Context, kv store.KV, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return kv.Put(ctx, key, raw, 0)
}

func (k KVRecipients) read(ctx context.Context, r string) (recipientSwitch, recipientRecord, error) {
	var sw recipientSwitch
	var rec recipientRecord
	if err := getJSON(ctx, k.KV, switchKey(r), &sw); err != nil {
		return sw, rec, err
	}
	err := getJSON(ctx, k.KV, recordKey(r), &rec)
	return sw, rec, err
}

func stateOf(r string, sw recipientSwitch, rec recipientRecord) RecipientState {
	return RecipientState{Recipient: r, Disabled: sw.Disabled, DisabledAt: sw.DisabledAt, Reason: sw.Reason,
		Generation: sw.Generation, LastSuccess: rec.LastSuccess, FailingSince: rec.FailingSince,
		Failures: rec.Failures, LastError: rec.LastError}
}

// Get implements Recipients.
func (k KVRecipients) Get(ctx context.Context, r string) (RecipientState, error) {
	sw, rec, err := k.read(ctx, r)
	return stateOf(r, sw, rec), err
}

// Disable implements Recipients.
func (k KVRecipients) Disable(ctx context.Context, r, reason string, now time.Time) (RecipientState, bool, error) {
	sw, rec, err := k.read(ctx, r)
	if err != nil {
		return stateOf(r, sw, rec), false, err
	}
	if sw.Disabled { // listed again: two disables at once may have lost one listing
		return stateOf(r, sw, rec), false, k.index(ctx, r, false)
	}
	sw.Disabled, sw.DisabledAt, sw.Reason = true, now, reason
	if err := putJSON(ctx, k.KV, switchKey(r), sw); err != nil {
		return stateOf(r, sw, rec), false, err
	}
	return stateOf(r, sw, rec), true, k.index(ctx, r, false)
}

// Enable implements Recipients. The failures counted so far are
// forgotten: the recipient gets a full disable_after again.
func (k KVRecipients) Enable(ctx context.Context, r string, now time.Time) (RecipientState, bool, error) {
	sw, rec, err := k.read(ctx, r)
	if err != nil || !sw.Disabled {
		return stateOf(r, sw, rec), false, err
	}
	sw = recipientSwitch{Generation: sw.Generation + 1}
	if err := putJSON(ctx, k.KV, switchKey(r), sw); err != nil {
		return stateOf(r, sw, rec), false, err
	}
	rec.FailingSince, rec.Failures = time.Time{}, 0
	if err := putJSON(ctx, k.KV, recordKey(r), rec); err != nil {
		return stateOf(r, sw, rec), true, err
	}
	return stateOf(r, sw, rec), true, k.index(ctx, r, true)
}

// Attempted implements Recipients.
func (k KVRecipients) Attempted(ctx context.Context, r string, ok bool, reason string, now time.Time) (RecipientState, error) {
	sw, rec, err := k.read(ctx, r)
	if err != nil {
		return stateOf(r, sw, rec), err
	}
	if ok {
		rec.LastSuccess, rec.FailingSince, rec.Failures = now, time.Time{}, 0
	} else {
		if rec.FailingSince.IsZero() {
			rec.FailingSince = now
		}
		rec.Failures++
		rec.LastError = reason
	}
	return stateOf(r, sw, rec), putJSON(ctx, k.KV, recordKey(r), rec)
}
