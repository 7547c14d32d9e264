package tasks

import (
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/source"
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

// DisplayName is how notices name the task (SPEC §20): its name, else
// the source's own title (a feed's), else the source's host; never its
// id, which tells a reader nothing. A config task's name defaults to its
// id, so such a name gives way to the source's title.
func (t *Task) DisplayName() string {
	switch {
	case t.Name != "" && t.Name != t.ID:
		return t.Name
	case t.SourceTitle != "":
		return t.SourceTitle
	case t.Name != "":
		return t.Name
	}
	if u, err := url.Parse(t.Source.URL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return t.ID
}

// Kinds of source whose items scroll off the end as new ones come: an
// item leaving them is not news unless the task asks (NotifyRemoved).
var rollingKinds = map[string]bool{source.KindRSS: true, "rsshub": true}

// RemovalsNotified reports whether an item leaving t's source, read as
// kind, is news: opt-in (NotifyRemoved) for feeds, whose old posts
// scroll off the end; always for pages, JSON, calendars and course
// sites, where a withdrawn entry means something. Removals are tracked
// and counted either way.
func (t *Task) RemovalsNotified(kind string) bool {
	if kind == "" {
		kind = t.Source.Kind
	}
	return t.NotifyRemoved || !rollingKinds[kind]
}

// OwnerAddress is where notices for the owner go: the chat the request
// came from, else the owner's inbox.
func (t *Task) OwnerAddress() string {
	if _, err := delivery.ParseAddress(t.ReplyTo); err == nil {
		return t.ReplyTo
	}
	return address.InboxOf(t.Owner)
}
