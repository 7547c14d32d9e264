package store

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)

// The states a transition may start from.
func queued() Progress { return Progress{State: Pending, NotBefore: t0, UpdatedAt: t0} }

func flying() Progress {
	p := queued()
	p.InFlight, p.Worker = true, "w1"
	p.Attempts = []Attempt{{N: 1, Start: t0, By: "w1", Outcome: Pending}}
	return p
}

func ended(s EffectState) Progress {
	p := flying()
	p.Attempts = slices.Clone(p.Attempts)
	p.Attempts[0].End, p.Attempts[0].Outcome = t0, s
	p.State, p.InFlight, p.Worker = s, false, ""
	return p
}

func starts() map[string]Progress {
	return map[string]Progress{
		"queued": queued(), "flying": flying(),
		"completed": ended(Completed), "failed": ended(Failed), "unknown": ended(Unknown),
	}
}

// Each transition is legal from exactly the states listed; from every
// other it refuses with ErrIllegalTransition and returns its input as is.
func TestTransitionsLegalFrom(t *testing.T) {
	later := t0.Add(time.Minute)
	tests := []struct {
		name  string
		do    func(Progress) (Progress, error)
		legal []string
	}{
		{"begin", func(p Progress) (Progress, error) { return p.Begin("w2", p.Version(), later) }, []string{"queued"}},
		{"settle", func(p Progress) (Progress, error) { return p.Settle(Outcome{State: Completed}, later) }, []string{"flying"}},
		{"hold", func(p Progress) (Progress, error) { return p.Hold(later, "quiet hours", later) }, []string{"queued"}},
		{"expire", func(p Progress) (Progress, error) { return p.Expire("expired", later) }, []string{"queued"}},
		{"redeliver", func(p Progress) (Progress, error) { return p.Redeliver("console:admin", later) },
			[]string{"completed", "failed", "unknown"}},
		{"recover", func(p Progress) (Progress, error) {
			return p.Recover("w1", Unknown, InterruptedUnknown, time.Time{}, later)
		},
			[]string{"flying"}},
	}
	for _, tt := range tests {
		for from, p := range starts() {
			before := p
			before.Attempts = slices.Clone(p.Attempts)
			got, err := tt.do(p)
			if !reflect.DeepEqual(p, before) {
				t.Errorf("%s from %s changed its input: %+v", tt.name, from, p)
			}
			if slices.Contains(tt.legal, from) {
				if err != nil {
					t.Errorf("%s from %s: %v", tt.name, from, err)
				}
				continue
			}
			if !errors.Is(err, ErrIllegalTransition) {
				t.Errorf("%s from %s = %v, want ErrIllegalTransition", tt.name, from, err)
			}
			if !reflect.DeepEqual(got, before) {
				t.Errorf("refused %s from %s returned %+v", tt.name, from, got)
			}
		}
	}
}

func TestBegin(t *testing.T) {
	p := queued()
	p.PartsSent = 2
	got, err := p.Begin("w2", 0, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := Attempt{N: 1, Start: t0.Add(time.Second), Part: 2, By: "w2", Outcome: Pending}
	if !got.Flying() || got.Worker != "w2" || !got.UpdatedAt.Equal(want.Start) || len(got.Attempts) != 1 || got.Attempts[0] != want {
		t.Fatalf("begun = %+v", got)
	}
	if got.Version() != 1 {
		t.Fatalf("version after begin = %d, want 1", got.Version())
	}
}

// A read older than the effect's current stay in the queue does not begin
// it: neither after an attempt nor after a hold that added no attempt.
func TestI1_BeginChecksTheVersionRead(t *testing.T) {
	p := queued()
	read := p.Version()
	held, err := p.Hold(t0.Add(time.Hour), "quiet hours", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(held.Attempts) != len(p.Attempts) || held.Version() == read {
		t.Fatalf("a hold keeps the attempts and moves the version on: %+v", held)
	}
	if _, err := held.Begin("w2", read, t0.Add(time.Hour)); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("begin from a read before the hold = %v, want ErrIllegalTransition", err)
	}
	if _, err := held.Begin("w2", held.Version(), t0.Add(time.Hour)); err != nil {
		t.Fatalf("begin from a current read: %v", err)
	}

	// An attempt, then a retry put off to later: the first read is stale.
	begun, _ := p.Begin("w1", read, t0)
	retry, err := begun.Settle(Outcome{State: Pending, RetryAt: t0.Add(time.Hour)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := retry.Begin("w2", read, t0); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("begin from a read before an attempt = %v", err)
	}
	if retry.Version() != len(retry.Attempts) {
		t.Fatalf("an effect never held has its attempts as its version: %d, %d attempts", retry.Version(), len(retry.Attempts))
	}
}

func TestSettle(t *testing.T) {
	now := t0.Add(time.Second)
	p := flying()
	p.PartsSent = 1
	retry := now.Add(time.Minute)
	got, err := p.Settle(Outcome{State: Pending, Error: "rate limited", RetryAt: retry, PartsSent: 2}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Queued() || !got.NotBefore.Equal(retry) || got.PartsSent != 2 || got.Error != "rate limited" || got.Worker != "" {
		t.Fatalf("retry = %+v", got)
	}
	if a := got.Attempts[0]; a.Outcome != Pending || !a.End.Equal(now) || a.Error != "rate limited" {
		t.Fatalf("attempt = %+v", a)
	}
	if p.Attempts[0].Outcome != Pending || !p.Attempts[0].End.IsZero() {
		t.Fatalf("settle wrote into the state it was given: %+v", p.Attempts[0])
	}
	got, _ = p.Settle(Outcome{State: Pending}, now)
	if !got.NotBefore.Equal(now) {
		t.Fatalf("retry without a time is due %v, want now", got.NotBefore)
	}
	got, _ = p.Settle(Outcome{State: Completed, ProviderID: "m-1", PartsSent: 0}, now)
	if got.State != Completed || got.InFlight || got.ProviderID != "m-1" || got.PartsSent != 1 {
		t.Fatalf("completed = %+v (parts sent never go back)", got)
	}
	if _, err := p.Settle(Outcome{State: "sent-ish"}, now); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("settle to an unknown state = %v", err)
	}
}

func TestHold(t *testing.T) {
	p := queued()
	p.Error = "earlier"
	got, _ := p.Hold(time.Time{}, "", t0.Add(time.Second))
	if !got.NotBefore.Equal(t0.Add(time.Second)) || got.Error != "earlier" || got.Holds != 1 {
		t.Fatalf("hold without a time or reason = %+v", got)
	}
	got, _ = got.Hold(t0.Add(time.Hour), "muted", t0.Add(time.Second))
	if !got.NotBefore.Equal(t0.Add(time.Hour)) || got.Error != "muted" || got.Holds != 2 || got.Version() != 2 {
		t.Fatalf("second hold = %+v", got)
	}
}

func TestExpire(t *testing.T) {
	got, _ := queued().Expire("expired", t0.Add(time.Second))
	if got.State != Failed || got.Error != "expired" || got.Queued() || len(got.Attempts) != 0 {
		t.Fatalf("expired = %+v", got)
	}
}

func TestRedeliver(t *testing.T) {
	now := t0.Add(time.Hour)
	p := ended(Failed)
	p.ExpiresAt, p.PartsSent, p.Error = t0.Add(time.Minute), 1, "expired"
	got, err := p.Redeliver("console:admin", now)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Queued() || !got.NotBefore.Equal(now) || !got.ExpiresAt.IsZero() || got.Error != "" || got.PartsSent != 1 {
		t.Fatalf("redelivered = %+v (due now, no longer bound by its deadline)", got)
	}
	want := Attempt{N: 2, Start: now, End: now, Part: 1, By: "console:admin", Outcome: Pending,
		Error: RedeliveryMark + " after failed"}
	if len(got.Attempts) != 2 || got.Attempts[1] != want {
		t.Fatalf("redelivery entry = %+v", got.Attempts)
	}
	if got.Version() <= p.Version() {
		t.Fatalf("redelivery kept the version %d", got.Version())
	}
}

func TestRecover(t *testing.T) {
	now := t0.Add(time.Minute)
	got, err := flying().Recover("w1", Pending, InterruptedUnsent, now, now)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Queued() || !got.NotBefore.Equal(now) || got.Error != InterruptedUnsent || got.Attempts[0].Outcome != Pending {
		t.Fatalf("queued again = %+v", got)
	}
	got, _ = flying().Recover("w1", Unknown, InterruptedUnknown, time.Time{}, now)
	if got.State != Unknown || got.InFlight || !got.Attempts[0].End.Equal(now) {
		t.Fatalf("unknown = %+v", got)
	}
	if _, err := flying().Recover("w2", Unknown, InterruptedUnknown, time.Time{}, now); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("recover of another worker's attempt = %v", err)
	}
	if _, err := flying().Recover("w1", Completed, "", time.Time{}, now); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("recover as completed = %v", err)
	}
}

func TestProgressRoundTrip(t *testing.T) {
	p := flying()
	p.ExpiresAt, p.Error, p.ProviderID, p.PartsSent, p.Holds = t0.Add(time.Hour), "e", "m", 2, 3
	var e Effect
	e.SetProgress(p)
	if got := e.Progress(); !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip = %+v, want %+v", got, p)
	}
	if e.Version() != 4 {
		t.Fatalf("version = %d, want 4 (one attempt, three holds)", e.Version())
	}
}
