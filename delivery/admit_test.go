package delivery_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// heldOnce holds every push once armed, as a chat's quiet hours would.
type heldOnce struct{ on atomic.Bool }

func (h *heldOnce) Hold(context.Context, string, string, time.Time, time.Time) (time.Time, bool) {
	return time.Now().Add(time.Hour), h.on.Load()
}

// An admission handed straight to a free local worker is claimed in flight
// with its first attempt recorded, sent once, and settled (I1, I3).
func TestI1_AdmissionHandedToAFreeWorkerIsSentOnce(t *testing.T) {
	st := openBolt(t)
	rv := newReceiver(t, nil)
	newDispatcher := func(h delivery.HoldPolicy) *delivery.Dispatcher {
		// No polling: what a dispatcher sends here, it was handed.
		d, err := delivery.NewDispatcher(delivery.Options{Ledger: st.Ledger(), Router: webhookRoute(t, rv, false), Holds: h,
			Worker: "w1", Poll: time.Hour, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = d.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		waitForHandoffs(t, ctx, d)
		return d
	}
	ad := &delivery.Admitter{Ledger: st.Ledger(), Direct: newDispatcher(nil)}
	msg := inbound("deploy done")
	res, err := ad.Admit(context.Background(), delivery.Admission{Source: "hook:ci", Identity: "d-1", Recipients: []string{"ops"}, Message: msg})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("admit: %v %+v", err, res)
	}
	waitFor(t, func() bool {
		fx, _ := st.Ledger().Get(context.Background(), res.Claimed[0])
		return fx.State == store.Completed
	}, "the handed-over push to complete")
	fx, _ := st.Ledger().Get(context.Background(), res.Claimed[0])
	if len(fx.Attempts) != 1 || fx.Attempts[0].By != "w1" || len(rv.received()) != 1 {
		t.Fatalf("attempts %+v, sent %d; want one attempt by the worker and one send", fx.Attempts, len(rv.received()))
	}
	// A repeat of the event claims nothing and sends nothing.
	if res, _ := ad.Admit(context.Background(), delivery.Admission{Source: "hook:ci", Identity: "d-1", Recipients: []string{"ops"}, Message: msg}); len(res.Claimed) != 0 {
		t.Fatal("a repeated event was claimed again")
	}

	// A recipient whose pushes are held is queued as usual, not handed over.
	held := &heldOnce{}
	ad.Direct = newDispatcher(held)
	held.on.Store(true)
	res, err = ad.Admit(context.Background(), delivery.Admission{Source: "hook:ci", Identity: "d-2", Recipients: []string{"ops"}, Message: msg})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("admit: %v %+v", err, res)
	}
	if fx, _ := st.Ledger().Get(context.Background(), res.Claimed[0]); fx.InFlight || len(fx.Attempts) != 0 {
		t.Fatalf("a held push was handed over: %+v", fx)
	}
}

// An admission without source, identity or recipients claims nothing.
func TestAdmissionNeedsSourceIdentityAndRecipients(t *testing.T) {
	ad := &delivery.Admitter{Ledger: openBolt(t).Ledger()}
	for _, a := range []delivery.Admission{
		{Identity: "d-1", Recipients: []string{"ops"}},
		{Source: "hook:ci", Recipients: []string{"ops"}},
		{Source: "hook:ci", Identity: "d-1"},
	} {
		if _, err := ad.Admit(context.Background(), a); err == nil {
			t.Errorf("%+v admitted", a)
		}
	}
}
