package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
)

// memInbox is an in-memory store.Inbox with the store's idempotency by
// effect key. failWith, when set, is returned by Append.
type memInbox struct {
	mu       sync.Mutex
	seq      int
	items    map[string][]store.InboxItem
	failWith error
}

var _ store.Inbox = (*memInbox)(nil)

func newMemInbox() *memInbox { return &memInbox{items: map[string][]store.InboxItem{}} }

func (m *memInbox) Append(_ context.Context, it store.InboxItem, _ int) (store.InboxAppend, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return store.InboxAppend{}, m.failWith
	}
	for _, old := range m.items[it.Principal] {
		if old.EffectKey == it.EffectKey {
			return store.InboxAppend{Item: old}, nil
		}
	}
	m.seq++
	it.ID = fmt.Sprintf("%020d", m.seq)
	m.items[it.Principal] = append(m.items[it.Principal], it)
	return store.InboxAppend{Item: it}, nil
}

func (m *memInbox) List(_ context.Context, principal string, _ store.InboxQuery) ([]store.InboxItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]store.InboxItem(nil), m.items[principal]...), nil
}

func (m *memInbox) MarkRead(context.Context, string, string) (int, error) { return 0, nil }

func (m *memInbox) Unread(_ context.Context, principal string) (int, error) {
	items, _ := m.List(context.Background(), principal, store.InboxQuery{})
	return len(items), nil
}

var testNow = time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC)

func testDelivery() delivery.Delivery {
	return delivery.Delivery{
		Key: "eff_77",
		To:  delivery.Address{Kind: delivery.InboxAddr, ID: "telegram:123456"},
		Message: delivery.Message{
			Kind: delivery.KindChanged, Title: "CS101 notices changed", TaskID: "t_42", TaskName: "CS101 notices",
			OccurredAt: testNow,
			Items:      []delivery.Item{{ID: "n1", Title: "Exam moved", Change: delivery.ChangeNew}},
		},
		Attempt: 1,
	}
}

func TestSendAppends(t *testing.T) {
	in := newMemInbox()
	s := New(in, WithClock(func() time.Time { return testNow }))
	d := testDelivery()
	out := s.Send(context.Background(), d)
	deliverytest.Outcome(t, out, delivery.Completed, "")
	items, _ := in.List(context.Background(), "telegram:123456", store.InboxQuery{})
	if len(items) != 1 {
		t.Fatalf("inbox holds %d items, want 1", len(items))
	}
	it := items[0]
	if out.ProviderID != it.ID || it.ID == "" {
		t.Errorf("ProviderID = %q, stored id %q", out.ProviderID, it.ID)
	}
	if it.Title != d.Message.Title || it.EffectKey != d.Key || !it.CreatedAt.Equal(testNow) {
		t.Errorf("stored item = %+v", it)
	}
	var m delivery.Message
	if err := json.Unmarshal(it.Body, &m); err != nil {
		t.Fatalf("body is not message JSON: %v", err)
	}
	if m.TaskID != "t_42" || len(m.Items) != 1 || m.Items[0].ID != "n1" || !m.OccurredAt.Equal(testNow) {
		t.Errorf("body round trip = %+v", m)
	}
}

// TestI3_InboxRepeatedAttemptStoresOnce: a retried or redelivered effect
// lands once, with the same item id.
func TestI3_InboxRepeatedAttemptStoresOnce(t *testing.T) {
	in := newMemInbox()
	s := New(in)
	d := testDelivery()
	first := s.Send(context.Background(), d)
	d.Attempt = 2
	second := s.Send(context.Background(), d)
	if first.ProviderID != second.ProviderID {
		t.Errorf("ids differ: %q, %q", first.ProviderID, second.ProviderID)
	}
	if n, _ := in.Unread(context.Background(), d.To.ID); n != 1 {
		t.Errorf("inbox holds %d items, want 1", n)
	}
	if !s.Dedups(d.To) {
		t.Error("Dedups = false, want true")
	}
}

func TestSendClassifiesStoreErrors(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		want   delivery.Result
		reason string
	}{
		{"unavailable", fmt.Errorf("redis: dial: %w", store.ErrUnavailable), delivery.RetryAfter, ReasonUnavailable},
		{"other", errors.New("bolt: tx closed"), delivery.Unknown, ReasonStore},
		{"conflict", fmt.Errorf("append: %w", store.ErrConflict), delivery.Unknown, ReasonStore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newMemInbox()
			in.failWith = tt.err
			out := New(in).Send(context.Background(), testDelivery())
			deliverytest.Outcome(t, out, tt.want, tt.reason)
			if tt.want == delivery.RetryAfter && out.After <= 0 {
				t.Errorf("After = %v, want a positive wait", out.After)
			}
			deliverytest.NoSecretInOutcome(t, out, "telegram:123456", "123456")
		})
	}
}

func TestSendRefusesOtherAddresses(t *testing.T) {
	for _, to := range []delivery.Address{
		{Kind: delivery.TelegramChat, ID: "123"},
		{Kind: delivery.Webhook, Name: "team-hook"},
		{Kind: delivery.InboxAddr, ID: "nobody"},
		{Kind: delivery.InboxAddr},
	} {
		in := newMemInbox()
		d := testDelivery()
		d.To = to
		deliverytest.Outcome(t, New(in).Send(context.Background(), d), delivery.Failed, ReasonWrongAddress)
		if len(in.items) != 0 {
			t.Errorf("%v: stored an item", to.Kind)
		}
	}
}

func TestSendCanceledBeforeAppend(t *testing.T) {
	in := newMemInbox()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	deliverytest.Outcome(t, New(in).Send(ctx, testDelivery()), delivery.RetryAfter, ReasonCanceled)
	if len(in.items) != 0 {
		t.Error("stored an item after cancellation")
	}
}

func TestUntitledChangeNoticeGetsItsRenderedTitle(t *testing.T) {
	in := newMemInbox()
	d := testDelivery()
	d.Message.Title = ""
	deliverytest.Outcome(t, New(in).Send(context.Background(), d), delivery.Completed, "")
	items, _ := in.List(context.Background(), "telegram:123456", store.InboxQuery{})
	if len(items) != 1 || !strings.Contains(items[0].Title, "CS101 notices") {
		t.Fatalf("stored title %q, want the rendered one naming the task", items[0].Title)
	}
}
