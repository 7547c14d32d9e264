package deliverytest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// Recorder is a sink that records every send and answers as told. Set its
// fields before a dispatcher sends to it.
type Recorder struct {
	// Answer decides each send's outcome; nil completes every send.
	Answer func(d delivery.Delivery) delivery.Outcome
	// OnSend runs at the start of each send, before it is recorded.
	OnSend func(d delivery.Delivery)
	// Dedup is what Dedups reports for every address.
	Dedup bool
	// Arrived receives once per send, after it is recorded.
	Arrived chan struct{}

	mu   sync.Mutex
	sent []delivery.Delivery
}

// NewRecorder returns a Recorder that completes every send.
func NewRecorder() *Recorder { return &Recorder{Arrived: make(chan struct{}, 10000)} }

// Send records d and answers it.
func (s *Recorder) Send(_ context.Context, d delivery.Delivery) delivery.Outcome {
	if s.OnSend != nil {
		s.OnSend(d)
	}
	s.mu.Lock()
	s.sent = append(s.sent, d)
	answer := s.Answer
	s.mu.Unlock()
	s.Arrived <- struct{}{}
	if answer != nil {
		return answer(d)
	}
	return delivery.Outcome{Result: delivery.Completed, ProviderID: "m-1"}
}

// Dedups reports the Dedup field.
func (s *Recorder) Dedups(delivery.Address) bool { return s.Dedup }

// Sent returns a copy of the deliveries sent so far, in order.
func (s *Recorder) Sent() []delivery.Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery.Delivery(nil), s.sent...)
}

// Items counts how often each item ID was sent.
func (s *Recorder) Items() map[string]int {
	out := map[string]int{}
	for _, d := range s.Sent() {
		for _, it := range d.Message.Items {
			out[it.ID]++
		}
	}
	return out
}

// Count returns the number of sends so far.
func (s *Recorder) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// Drain runs a real dispatcher named worker over st's ledger, routing inbox
// and Telegram addresses to sink, until nothing is due within a minute of
// now() and no effect is in flight; then it stops the dispatcher.
func Drain(t testing.TB, st store.Store, sink delivery.Sink, worker string, now func() time.Time) {
	t.Helper()
	d, err := delivery.NewDispatcher(delivery.Options{
		Ledger: st.Ledger(), Worker: worker, Log: zerolog.Nop(), Poll: 10 * time.Millisecond, Now: now,
		Router: delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{
			delivery.InboxAddr: sink, delivery.TelegramChat: sink}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	WaitFor(t, func() bool {
		due, err := st.Ledger().Due(context.Background(), now().Add(time.Minute), 1)
		return err == nil && len(due) == 0 && !inFlight(st)
	})
	cancel()
	<-done
}

// inFlight reports whether any effect of a catalogued task, or of the
// task ID "test", is claimed but not finished.
func inFlight(st store.Store) bool {
	recs, _ := st.Catalog().List(context.Background())
	ids := []string{"test"}
	for _, rec := range recs {
		ids = append(ids, rec.ID)
	}
	for _, id := range ids {
		fxs, _ := st.Ledger().List(context.Background(), id, 0)
		for _, fx := range fxs {
			if fx.InFlight {
				return true
			}
		}
	}
	return false
}

// Effects returns a task's ledger entries split into item deliveries and
// state notices.
func Effects(t testing.TB, ledger store.Ledger, taskID string) (items, notices []store.Effect) {
	t.Helper()
	fxs, err := ledger.List(context.Background(), taskID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range fxs {
		if fx.Kind == delivery.KindState {
			notices = append(notices, fx)
		} else {
			items = append(items, fx)
		}
	}
	return items, notices
}

// Message decodes the message an effect carries.
func Message(t testing.TB, fx store.Effect) delivery.Message {
	t.Helper()
	var m delivery.Message
	if err := json.Unmarshal(fx.Payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// WaitFor polls cond until it holds, failing t after 10 seconds.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
