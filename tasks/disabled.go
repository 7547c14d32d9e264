package tasks

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/store"
)

// DisabledSource is the ledger source of the notices that a recipient
// was disabled.
const DisabledSource = "recipients"

// RecipientDisabled tells whoever answers for recipient that it was
// disabled (SPEC §21): the owner of the task whose push disabled it, or
// the admins when the recipient is declared in config (named) or the
// push was no task's. The notice is claimed once per recipient and
// disable generation, so of the replicas that see the recipient go, one
// notice goes out per person however many pushes failed. A notice never
// goes to the disabled recipient itself: the owner's inbox takes it then.
// The task also lists the recipient as unreachable, as MarkUnreachable
// does, without a notice of that.
func (m *Manager) RecipientDisabled(ctx context.Context, taskID, recipient string, named bool, st delivery.RecipientState) error {
	// The task lists the recipient as unreachable too (the console's
	// view), without a notice of its own: this one says it all.
	if _, err := m.markUnreachable(ctx, taskID, recipient); err != nil {
		return err
	}
	var to []string
	lang := ""
	if t, err := m.Get(ctx, taskID); err == nil && !named {
		lang = OwnerLang(ctx, m.store, t)
		to = append(to, t.OwnerAddress())
		if to[0] == recipient {
			to[0] = address.InboxOf(t.Owner)
		}
	} else {
		for _, a := range m.Policy().Admins {
			at := address.ChatOf(a)
			if _, err := delivery.ParseAddress(at); err != nil || at == recipient {
				at = address.InboxOf(a)
			}
			if !slices.Contains(to, at) {
				to = append(to, at)
			}
		}
	}
	if len(to) == 0 {
		return nil
	}
	title, text := render.FormatNotice(lang, render.NoticeDisabled, recipient, st.Reason)
	now := m.clock.Now()
	msg := delivery.Message{Kind: delivery.KindState, Title: title, Text: text, OccurredAt: now}
	payload, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	identity := "disabled|" + recipient + "|" + strconv.Itoa(st.Generation)
	fxs := make([]store.Effect, 0, len(to))
	for _, r := range to {
		fxs = append(fxs, store.Effect{
			Key: delivery.EffectKey(DisabledSource, identity, r), TaskID: DisabledSource, Recipient: r,
			Kind: delivery.KindState, Payload: payload, State: store.Pending, NotBefore: now,
			ExpiresAt: now.Add(delivery.ChangeTTL), CreatedAt: now, UpdatedAt: now, RunID: DisabledSource + "/" + identity,
		})
	}
	_, err = m.store.Ledger().Commit(ctx, store.RunCommit{TaskID: DisabledSource, Effects: fxs})
	m.o.WakeDelivery()
	return err
}
