// Package inbox is the sink that stores a push in a principal's inbox
// (read through /inbox, GET /api/v1/inbox and the web page). The store
// keeps one item per effect key, so an attempt may be repeated safely.
package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/store"
)

// UnavailableRetryAfter is the wait after the store reported itself
// unreachable.
const UnavailableRetryAfter = 5 * time.Second

// Outcome reasons reported by the sink.
const (
	ReasonWrongAddress = "wrong_address"
	ReasonEncode       = "encode_failed"
	ReasonUnavailable  = "store_unavailable"
	ReasonStore        = "store_error"
	ReasonCanceled     = "canceled"
)

// Sink appends deliveries to inboxes.
type Sink struct {
	in  store.Inbox
	now func() time.Time
}

var (
	_ delivery.Sink          = (*Sink)(nil)
	_ delivery.Deduplicating = (*Sink)(nil)
)

// Option configures a Sink.
type Option func(*Sink)

// WithClock sets the clock that stamps CreatedAt (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(s *Sink) { s.now = now }
}

// New returns the inbox sink writing to in.
func New(in store.Inbox, opts ...Option) *Sink {
	s := &Sink{in: in, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Dedups is always true: appending the same effect key twice stores one
// item, so an unknown outcome may be retried (I3).
func (s *Sink) Dedups(delivery.Address) bool { return true }

// Send appends the message to the inbox of the principal d.To names
// (an inbox:<principal> address). The item's title is the message title
// (rendered in the recipient's language when the message has none)
// and its body the message JSON. Completed carries the stored item id; a
// store that is unreachable gives RetryAfter, any other store error Unknown.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	if d.To.Kind != delivery.InboxAddr || !delivery.ValidPrincipal(d.To.ID) {
		return delivery.Outcome{Result: delivery.Failed, Reason: ReasonWrongAddress}
	}
	if ctx.Err() != nil {
		return delivery.Outcome{Result: delivery.RetryAfter, Reason: ReasonCanceled}
	}
	body, err := json.Marshal(d.Message)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: ReasonEncode}
	}
	title := d.Message.Title
	if title == "" { // change notices carry no title of their own: render it
		title = render.Title(d.Message, d.Lang, s.now())
	}
	item, err := s.in.Append(ctx, store.InboxItem{
		Principal: d.To.ID,
		EffectKey: d.Key,
		Title:     title,
		Body:      body,
		CreatedAt: s.now().UTC(),
	})
	switch {
	case err == nil:
		return delivery.Outcome{Result: delivery.Completed, ProviderID: item.ID}
	case errors.Is(err, store.ErrUnavailable):
		return delivery.Outcome{Result: delivery.RetryAfter, After: UnavailableRetryAfter, Reason: ReasonUnavailable}
	}
	return delivery.Outcome{Result: delivery.Unknown, Reason: ReasonStore}
}
