package tasks

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
)

// NoticeEffect is a task.state notice to the task's owner.
func NoticeEffect(t *Task, identity, title, text string, now time.Time) (store.Effect, error) {
	fxs := NoticesTo(t, []string{t.OwnerAddress()}, identity, title, text, now)
	if len(fxs) == 0 {
		return store.Effect{}, errors.New("encode notice")
	}
	return fxs[0], nil
}

// NoticesTo is a task.state notice to each of recipients.
func NoticesTo(t *Task, recipients []string, identity, title, text string, now time.Time) []store.Effect {
	msg := delivery.Message{Kind: delivery.KindState, Title: title, Text: text, TaskID: t.ID, TaskName: t.DisplayName(), OccurredAt: now}
	payload, err := json.Marshal(msg)
	if err != nil {
		return nil
	}
	out := make([]store.Effect, 0, len(recipients))
	for _, to := range recipients {
		out = append(out, store.Effect{
			Key: delivery.EffectKey(t.ID, identity, to), TaskID: t.ID, Recipient: to, Kind: delivery.KindState,
			Payload: payload, State: store.Pending, NotBefore: now, ExpiresAt: now.Add(delivery.ChangeTTL),
			CreatedAt: now, UpdatedAt: now, RunID: t.ID + "/" + identity,
		})
	}
	return out
}

// DisplayName is the task's name, else its id.
func (t *Task) DisplayName() string {
	if t.Name != "" {
		return t.Name
	}
	return t.ID
}

// OwnerAddress is where notices for the owner go: the chat the request
// came from, else the owner's inbox.
func (t *Task) OwnerAddress() string {
	if _, err := delivery.ParseAddress(t.ReplyTo); err == nil {
		return t.ReplyTo
	}
	return address.InboxOf(t.Owner)
}
