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
	in      store.Inbox
	now     func() time.Time
	limit   int                    // items kept per principal (0: store.InboxCap)
	dropped func(read, unread int) // told what the cap dropped
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

// WithLimit keeps at most n items per principal (policy.limits.inbox_items).
func WithLimit(n int) Option {
	return func(s *Sink) { s.limit = n }
}

// WithDropped tells fn how many read and unread items each append's cap
// dropped (for metrics).
func WithDropped(fn func(read, unread int)) Option {
	return func(s *Sink) { s.dropped = fn }
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
	res, err := s.in.Append(ctx, store.InboxItem{
		Principal: d.To.ID,
		EffectKey: d.Key,
		Title:     title,
		Body:      body,
		CreatedAt: s.now().UTC(),
	}, s.limit)
	switch {
	case err == nil:
		s.trimmed(ctx, d, res)
		return delivery.Outcome{Result: delivery.Completed, ProviderID: res.Item.ID}
	case errors.Is(err, store.ErrUnavailable):
		return delivery.Outcome{Result: delivery.RetryAfter, After: UnavailableRetryAfter, Reason: ReasonUnavailable}
	}
	return delivery.Outcome{Result: delivery.Unknown, Reason: ReasonStore}
}

// fullKey is the effect key of the notice that an inbox is full: one
// such notice stands in the inbox at a time, so its owner is told once,
// not once per item dropped.
func fullKey(principal string) string { return "inbox-full:" + principal }

// trimmed counts what the cap dropped and, when unread items had to go,
// tells the owner once, in their inbox: nothing unread leaves silently.
func (s *Sink) trimmed(ctx context.Context, d delivery.Delivery, res store.InboxAppend) {
	if res.DroppedRead+res.DroppedUnread == 0 {
		return
	}
	if s.dropped != nil {
		s.dropped(res.DroppedRead, res.DroppedUnread)
	}
	if res.DroppedUnread == 0 || d.Key == fullKey(d.To.ID) {
		return
	}
	msg := fullNotice(d.Lang, s.limit)
	body, err := json.Marshal(msg)
	if err != nil {
		return
	}
	// Best effort: the push itself is stored; a notice that cannot be
	// written now is written with the next drop.
	if r, err := s.in.Append(ctx, store.InboxItem{Principal: d.To.ID, EffectKey: fullKey(d.To.ID),
		Title: msg.Title, Body: body, CreatedAt: s.now().UTC()}, s.limit); err == nil && s.dropped != nil {
		s.dropped(r.DroppedRead, r.DroppedUnread)
	}
}

// fullNotice says, in the owner's language, that the inbox is full and
// unread items are leaving it.
func fullNotice(lang string, limit int) delivery.Message {
	if limit <= 0 {
		limit = store.InboxCap
	}
	m := delivery.Message{Kind: delivery.KindState}
	m.Title, m.Text = render.InboxFull(lang, limit)
	return m
}
