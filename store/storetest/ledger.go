package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

func testLedger(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("I1_ConcurrentCommitClaimsOnce", func(t *testing.T) {
		s := open(t)
		const n = 20
		results := make([]store.CommitResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				results[i], errs[i] = s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t1",
					Effects: []store.Effect{effect("t1", "same-key", time.Time{})}})
			})
		}
		wg.Wait()
		claimed, dups := 0, 0
		for i := range n {
			noErr(t, errs[i])
			claimed += len(results[i].Claimed)
			dups += len(results[i].Duplicates)
		}
		if claimed != 1 || dups != n-1 {
			t.Fatalf("claimed %d, duplicates %d; want 1 and %d", claimed, dups, n-1)
		}
		due := must(s.Ledger().Due(ctx, time.Now().Add(time.Hour), 0))(t)
		wantKeys(t, due, "same-key")
	})

	t.Run("I1_DuplicateUntouched", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		commit(t, s, "t1", effect("t1", "k1", time.Time{}))
		must(l.Begin(ctx, "k1", "w1", 0, time.Now()))(t)
		must(l.Settle(ctx, "k1", store.Outcome{State: store.Completed, ProviderID: "m-1"}, time.Now()))(t)
		res := commit(t, s, "t1", effect("t1", "k1", time.Time{}), effect("t1", "k2", time.Time{}), effect("t1", "k2", time.Time{}))
		if !slices.Equal(res.Claimed, []string{"k2"}) || !slices.Equal(res.Duplicates, []string{"k1", "k2"}) {
			t.Fatalf("result = %+v", res)
		}
		if e := must(l.Get(ctx, "k1"))(t); e.State != store.Completed || e.ProviderID != "m-1" {
			t.Fatalf("duplicate claim touched the effect: %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, time.Now().Add(time.Hour), 0))(t), "k2")
	})

	t.Run("CommitStoresEffect", func(t *testing.T) {
		s := open(t)
		in := effect("t1", "k1", time.Time{})
		in.ExpiresAt = base().Add(time.Hour)
		in.State, in.InFlight, in.Worker = store.Completed, true, "forged"
		before := time.Now().Add(-time.Second)
		commit(t, s, "t1", in)
		e := must(s.Ledger().Get(ctx, "k1"))(t)
		if e.TaskID != "t1" || e.Recipient != in.Recipient || e.Kind != in.Kind || !bytes.Equal(e.Payload, in.Payload) ||
			e.RunID != "run-1" || !e.ExpiresAt.Equal(in.ExpiresAt) {
			t.Fatalf("stored effect = %+v", e)
		}
		if e.State != store.Pending || e.InFlight || e.Worker != "" || len(e.Attempts) != 0 {
			t.Fatalf("a claim starts pending and queued, got %+v", e)
		}
		if e.CreatedAt.Before(before) {
			t.Fatalf("CreatedAt = %v", e.CreatedAt)
		}
		_, err := s.Ledger().Get(ctx, "absent")
		wantErr(t, err, store.ErrNotFound)
	})

	t.Run("I5_StaleRevisionCommitsNothing", func(t *testing.T) {
		s := open(t)
		c, l := s.Catalog(), s.Ledger()
		must(c.Put(ctx, store.Fence{}, "t1", 0, []byte("v1")))(t)
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 1, Snapshot: []byte("snap-1")}))(t)
		must(c.Put(ctx, store.Fence{}, "t1", 1, []byte("v2")))(t)

		_, err := l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 1, Snapshot: []byte("snap-stale"),
			Effects: []store.Effect{effect("t1", "k1", time.Time{}), effect("t1", "k2", time.Time{})}})
		wantErr(t, err, store.ErrConflict)
		for _, k := range []string{"k1", "k2"} {
			_, err := l.Get(ctx, k)
			wantErr(t, err, store.ErrNotFound)
		}
		if snap := must(s.Snapshots().Get(ctx, "t1"))(t); string(snap) != "snap-1" {
			t.Fatalf("snapshot = %q after a refused commit", snap)
		}
		if due := must(l.Due(ctx, time.Now().Add(time.Hour), 0))(t); len(due) != 0 {
			t.Fatalf("refused commit queued %v", keys(due))
		}
		// A task that does not exist has no revision to match either.
		_, err = l.Commit(ctx, store.RunCommit{TaskID: "gone", TaskRevision: 1, Effects: []store.Effect{effect("gone", "k3", time.Time{})}})
		wantErr(t, err, store.ErrConflict)

		res := must(l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 2, Snapshot: []byte("snap-2"),
			Effects: []store.Effect{effect("t1", "k1", time.Time{})}}))(t)
		if !slices.Equal(res.Claimed, []string{"k1"}) {
			t.Fatalf("claimed = %v", res.Claimed)
		}
		if snap := must(s.Snapshots().Get(ctx, "t1"))(t); string(snap) != "snap-2" {
			t.Fatalf("snapshot = %q", snap)
		}
		// Without a snapshot the stored one stays.
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 2}))(t)
		if snap := must(s.Snapshots().Get(ctx, "t1"))(t); string(snap) != "snap-2" {
			t.Fatalf("snapshot = %q after a commit without one", snap)
		}
		_, err = s.Snapshots().Get(ctx, "other")
		wantErr(t, err, store.ErrNotFound)
	})

	// An effect that names no due time is due from its claim, not from a
	// creation time its caller may have set earlier, on every backend.
	t.Run("ClaimWithoutADueTimeIsDueFromTheClaim", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		before := time.Now().Add(-time.Millisecond)
		in := effect("t1", "k1", time.Time{})
		in.CreatedAt = before.Add(-time.Hour)
		commit(t, s, "t1", in)
		after := time.Now().Add(time.Millisecond)
		within := func(at time.Time) bool { return !at.Before(before) && !at.After(after) }
		if e := must(l.Get(ctx, "k1"))(t); !within(e.NotBefore) || !e.CreatedAt.Equal(in.CreatedAt) {
			t.Fatalf("claimed at %v..%v: due %v, created %v", before, after, e.NotBefore, e.CreatedAt)
		}
		if at, ok := must2(t)(l.NextDue(ctx)); !ok || !within(at) {
			t.Fatalf("NextDue = %v %v, want the claim's time", at, ok)
		}
	})

	t.Run("DueOrderLimitNotBefore", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		if _, ok := must2(t)(l.NextDue(ctx)); ok {
			t.Fatal("NextDue on an empty queue reports a time")
		}
		b := base().Add(time.Hour)
		commit(t, s, "t1", effect("t1", "k3", b.Add(3*time.Second)), effect("t1", "k1", b.Add(time.Second)))
		commit(t, s, "t2", effect("t2", "k2", b.Add(2*time.Second)), effect("t2", "k10", b.Add(10*time.Second)))
		wantKeys(t, must(l.Due(ctx, b, 0))(t))
		wantKeys(t, must(l.Due(ctx, b.Add(time.Second), 0))(t), "k1")
		wantKeys(t, must(l.Due(ctx, b.Add(5*time.Second), 0))(t), "k1", "k2", "k3")
		wantKeys(t, must(l.Due(ctx, b.Add(5*time.Second), 2))(t), "k1", "k2")
		wantKeys(t, must(l.Due(ctx, b.Add(time.Minute), 0))(t), "k1", "k2", "k3", "k10")
		at, ok := must2(t)(l.NextDue(ctx))
		if !ok || !at.Equal(b.Add(time.Second)) {
			t.Fatalf("NextDue = %v %v, want %v", at, ok, b.Add(time.Second))
		}
		must(l.Begin(ctx, "k1", "w1", 0, b.Add(time.Second)))(t)
		at, ok = must2(t)(l.NextDue(ctx))
		if !ok || !at.Equal(b.Add(2*time.Second)) {
			t.Fatalf("NextDue with k1 in flight = %v %v", at, ok)
		}
		wantKeys(t, must(l.Due(ctx, b.Add(time.Minute), 0))(t), "k2", "k3", "k10")
	})

	t.Run("BeginRaceOneWinner", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		e := effect("t1", "k1", time.Time{})
		e.PartsSent = 1
		commit(t, s, "t1", e)
		const n = 10
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { _, errs[i] = l.Begin(ctx, "k1", fmt.Sprintf("w%d", i), 0, time.Now()) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrIllegalTransition):
				t.Fatalf("loser error = %v, want ErrIllegalTransition", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d Begin calls won, want 1", won)
		}
		got := must(l.Get(ctx, "k1"))(t)
		if !got.InFlight || got.State != store.Pending || got.Worker == "" || len(got.Attempts) != 1 {
			t.Fatalf("after Begin: %+v", got)
		}
		if a := got.Attempts[0]; a.N != 1 || a.By != got.Worker || a.Part != 1 || a.Outcome != store.Pending || a.Start.IsZero() {
			t.Fatalf("attempt = %+v", a)
		}
		wantKeys(t, must(l.Due(ctx, time.Now().Add(time.Hour), 0))(t))
		_, err := l.Begin(ctx, "absent", "w1", 0, time.Now())
		wantErr(t, err, store.ErrNotFound)
	})

	t.Run("SettleRetryRequeues", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now))
		must(l.Begin(ctx, "k1", "w1", 0, now))(t)
		retry := now.Add(time.Minute)
		e := must(l.Settle(ctx, "k1", store.Outcome{State: store.Pending, Error: "rate limited", RetryAt: retry, PartsSent: 2}, now.Add(time.Second)))(t)
		if e.State != store.Pending || e.InFlight || e.Worker != "" || !e.NotBefore.Equal(retry) || e.PartsSent != 2 || e.Error != "rate limited" {
			t.Fatalf("after retry: %+v", e)
		}
		if a := e.Attempts[0]; a.Outcome != store.Pending || !a.End.Equal(now.Add(time.Second)) || a.Error != "rate limited" {
			t.Fatalf("attempt = %+v", a)
		}
		wantKeys(t, must(l.Due(ctx, now.Add(30*time.Second), 0))(t))
		wantKeys(t, must(l.Due(ctx, retry, 0))(t), "k1")
		if got := must(l.Get(ctx, "k1"))(t); got.PartsSent != 2 {
			t.Fatalf("PartsSent not persisted: %d", got.PartsSent)
		}
		e = must(l.Begin(ctx, "k1", "w2", 1, retry))(t)
		if len(e.Attempts) != 2 || e.Attempts[1].N != 2 || e.Attempts[1].Part != 2 || e.Attempts[1].By != "w2" {
			t.Fatalf("second attempt = %+v", e.Attempts)
		}
		e = must(l.Settle(ctx, "k1", store.Outcome{State: store.Completed, ProviderID: "m-9", PartsSent: 3}, retry))(t)
		if e.State != store.Completed || e.ProviderID != "m-9" || e.PartsSent != 3 {
			t.Fatalf("completed: %+v", e)
		}
	})

	// A worker that read the effect before another worker's attempt (a
	// queue read older than that attempt's outcome) must not begin it:
	// the retry it would send is not due yet, on any replica.
	t.Run("I1_BeginRefusesAReadOlderThanAnAttempt", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now))
		read := must(l.Get(ctx, "k1"))(t)
		must(l.Begin(ctx, "k1", "w1", len(read.Attempts), now))(t)
		retry := now.Add(time.Hour)
		must(l.Settle(ctx, "k1", store.Outcome{State: store.Pending, Error: "rate_limited", RetryAt: retry}, now))(t)
		_, err := l.Begin(ctx, "k1", "w2", len(read.Attempts), now)
		wantErr(t, err, store.ErrIllegalTransition)
		e := must(l.Get(ctx, "k1"))(t)
		if e.InFlight || len(e.Attempts) != 1 || !e.NotBefore.Equal(retry) {
			t.Fatalf("after a stale begin: in flight %t, %d attempts, due %s; want untouched", e.InFlight, len(e.Attempts), e.NotBefore)
		}
		must(l.Begin(ctx, "k1", "w2", len(e.Attempts), retry))(t)
	})

	// A hold adds no attempt (quiet hours, an order wait set by another
	// replica) but puts the effect off: a queue read from before it must
	// not begin it, or the push goes out while it is held.
	t.Run("I1_BeginRefusesAReadOlderThanAHold", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now))
		due := must(l.Due(ctx, now, 0))(t)
		wantKeys(t, due, "k1")
		until := now.Add(8 * time.Hour)
		must(l.Defer(ctx, "k1", until, "quiet hours", now))(t)
		_, err := l.Begin(ctx, "k1", "w1", due[0].Version(), now)
		wantErr(t, err, store.ErrIllegalTransition)
		e := must(l.Get(ctx, "k1"))(t)
		if e.InFlight || len(e.Attempts) != 0 || !e.NotBefore.Equal(until) {
			t.Fatalf("after a stale begin: in flight %t, %d attempts, due %s; want untouched", e.InFlight, len(e.Attempts), e.NotBefore)
		}
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t))
		// Read again once due, it begins.
		due = must(l.Due(ctx, until, 0))(t)
		wantKeys(t, due, "k1")
		must(l.Begin(ctx, "k1", "w1", due[0].Version(), until))(t)
	})

	// A human replay of an expired push is not expired again at once.
	t.Run("RedeliverIsNotBoundByTheDeadline", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		in := effect("t1", "k1", now)
		in.ExpiresAt = now.Add(time.Minute)
		commit(t, s, "t1", in)
		must(l.Expire(ctx, "k1", "expired", now.Add(time.Minute)))(t)
		later := now.Add(time.Hour)
		e := must(l.Redeliver(ctx, "k1", "console:admin", later))(t)
		if e.State != store.Pending || !e.ExpiresAt.IsZero() {
			t.Fatalf("redelivered = %+v, want pending without a deadline", e)
		}
		if got := must(l.Get(ctx, "k1"))(t); !got.ExpiresAt.IsZero() {
			t.Fatalf("stored deadline after a redelivery = %v", got.ExpiresAt)
		}
	})

	t.Run("SettleFinalStates", func(t *testing.T) {
		for _, final := range []store.EffectState{store.Completed, store.Failed, store.Unknown} {
			t.Run(string(final), func(t *testing.T) {
				s := open(t)
				l := s.Ledger()
				now := base()
				commit(t, s, "t1", effect("t1", "k1", now))
				_, err := l.Settle(ctx, "k1", store.Outcome{State: final}, now)
				wantErr(t, err, store.ErrIllegalTransition) // queued, not in flight
				must(l.Begin(ctx, "k1", "w1", 0, now))(t)
				e := must(l.Settle(ctx, "k1", store.Outcome{State: final, Error: "reason"}, now))(t)
				if e.State != final || e.InFlight || e.Attempts[0].Outcome != final {
					t.Fatalf("settled: %+v", e)
				}
				_, err = l.Settle(ctx, "k1", store.Outcome{State: store.Completed}, now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Settle(ctx, "k1", store.Outcome{State: store.Pending, RetryAt: now}, now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Begin(ctx, "k1", "w2", 0, now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Expire(ctx, "k1", "late", now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Defer(ctx, "k1", now.Add(time.Hour), "", now)
				wantErr(t, err, store.ErrIllegalTransition)
				wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t))
				if got := must(l.Get(ctx, "k1"))(t); got.State != final || len(got.Attempts) != 1 {
					t.Fatalf("refused transitions changed the effect: %+v", got)
				}
			})
		}
	})

	t.Run("SettleUnknownStateRefused", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		commit(t, s, "t1", effect("t1", "k1", time.Time{}))
		must(l.Begin(ctx, "k1", "w1", 0, time.Now()))(t)
		_, err := l.Settle(ctx, "k1", store.Outcome{State: "sent-ish"}, time.Now())
		wantErr(t, err, store.ErrIllegalTransition)
		if got := must(l.Get(ctx, "k1"))(t); !got.InFlight {
			t.Fatalf("refused settle ended the attempt: %+v", got)
		}
	})

	t.Run("Expire", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now), effect("t1", "k2", now))
		e := must(l.Expire(ctx, "k1", "expired", now))(t)
		if e.State != store.Failed || e.Error != "expired" || len(e.Attempts) != 0 {
			t.Fatalf("expired: %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t), "k2")
		must(l.Begin(ctx, "k2", "w1", 0, now))(t)
		_, err := l.Expire(ctx, "k2", "expired", now)
		wantErr(t, err, store.ErrIllegalTransition)
	})

	t.Run("Defer", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now), effect("t1", "k2", now))
		until := now.Add(8 * time.Hour)
		e := must(l.Defer(ctx, "k1", until, "held", now))(t)
		if e.State != store.Pending || e.InFlight || !e.NotBefore.Equal(until) || len(e.Attempts) != 0 || e.Error != "held" {
			t.Fatalf("deferred: %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t), "k2")
		wantKeys(t, must(l.Due(ctx, until, 0))(t), "k2", "k1")
		must(l.Begin(ctx, "k2", "w1", 0, now))(t)
		_, err := l.Defer(ctx, "k2", until, "", now)
		wantErr(t, err, store.ErrIllegalTransition)
		at, ok := must2(t)(l.NextDue(ctx))
		if !ok || !at.Equal(until) {
			t.Fatalf("NextDue = %v %v, want %v", at, ok, until)
		}
	})

	t.Run("Redeliver", func(t *testing.T) {
		for _, final := range []store.EffectState{store.Completed, store.Failed, store.Unknown} {
			t.Run(string(final), func(t *testing.T) {
				s := open(t)
				l := s.Ledger()
				now := base()
				commit(t, s, "t1", effect("t1", "k1", now))
				_, err := l.Redeliver(ctx, "k1", "console:admin", now)
				wantErr(t, err, store.ErrIllegalTransition) // queued
				must(l.Begin(ctx, "k1", "w1", 0, now))(t)
				_, err = l.Redeliver(ctx, "k1", "console:admin", now)
				wantErr(t, err, store.ErrIllegalTransition) // in flight
				must(l.Settle(ctx, "k1", store.Outcome{State: final, PartsSent: 1}, now))(t)

				later := now.Add(time.Minute)
				e := must(l.Redeliver(ctx, "k1", "console:admin", later))(t)
				if e.State != store.Pending || e.InFlight || e.PartsSent != 1 {
					t.Fatalf("redelivered: %+v", e)
				}
				if n := len(e.Attempts); n < 2 || e.Attempts[n-1].By != "console:admin" {
					t.Fatalf("attempt history does not record who: %+v", e.Attempts)
				}
				wantKeys(t, must(l.Due(ctx, later, 0))(t), "k1")
				_, err = l.Redeliver(ctx, "k1", "console:admin", later)
				wantErr(t, err, store.ErrIllegalTransition) // pending again
				e = must(l.Begin(ctx, "k1", "w2", 2, later))(t)
				if a := e.Attempts[len(e.Attempts)-1]; a.By != "w2" || a.Part != 1 {
					t.Fatalf("attempt after redelivery = %+v", a)
				}
			})
		}
	})

	t.Run("I3_RecoverTurnsDeadInFlightUnknown", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "dead", now), effect("t1", "live", now), effect("t1", "queued", now))
		must(l.Begin(ctx, "dead", "w-dead", 0, now))(t)
		must(l.Begin(ctx, "live", "w-live", 0, now))(t)
		alive := func(w string) bool { return w == "w-live" }

		got := must(l.Recover(ctx, store.Recovery{Alive: alive}, now.Add(time.Second)))(t)
		wantKeys(t, got, "dead")
		if got[0].State != store.Unknown || got[0].InFlight {
			t.Fatalf("recovered effect = %+v", got[0])
		}
		e := must(l.Get(ctx, "dead"))(t)
		if e.State != store.Unknown || e.InFlight || e.Attempts[0].Outcome != store.Unknown || e.Attempts[0].End.IsZero() {
			t.Fatalf("stored recovered effect = %+v", e)
		}
		if e := must(l.Get(ctx, "live"))(t); e.State != store.Pending || !e.InFlight || e.Worker != "w-live" {
			t.Fatalf("live worker's effect touched: %+v", e)
		}
		if e := must(l.Get(ctx, "queued"))(t); e.State != store.Pending || e.InFlight {
			t.Fatalf("queued effect touched: %+v", e)
		}
		// Unknown is never replayed automatically: only the queued one is due.
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t), "queued")
		wantKeys(t, must(l.Recover(ctx, store.Recovery{Alive: alive}, now.Add(2*time.Second)))(t))
	})

	t.Run("I3_CommitInFlightForAWorker", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		res := must(l.Commit(ctx, store.RunCommit{TaskID: "t1", Worker: "w-1",
			Effects: []store.Effect{effect("t1", "direct", now)}}))(t)
		if len(res.Claimed) != 1 {
			t.Fatalf("claimed %v", res.Claimed)
		}
		e := must(l.Get(ctx, "direct"))(t)
		if e.State != store.Pending || !e.InFlight || e.Worker != "w-1" || len(e.Attempts) != 1 || e.Attempts[0].By != "w-1" {
			t.Fatalf("effect claimed in flight = %+v", e)
		}
		// Not queued: no other worker may take it.
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t))
		if _, err := l.Begin(ctx, "direct", "w-2", 0, now); !errors.Is(err, store.ErrIllegalTransition) {
			t.Fatalf("another worker began it: %v", err)
		}
		// A second claim of the key is still refused.
		if res := commit(t, s, "t1", effect("t1", "direct", now)); len(res.Duplicates) != 1 {
			t.Fatalf("second claim: %+v", res)
		}
		done := must(l.Settle(ctx, "direct", store.Outcome{State: store.Completed, ProviderID: "p"}, now))(t)
		if done.State != store.Completed || done.InFlight {
			t.Fatalf("settled = %+v", done)
		}
		// A dead worker's directly claimed effect recovers as unknown (I3).
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", Worker: "w-dead", Effects: []store.Effect{effect("t1", "lost", now)}}))(t)
		wantKeys(t, must(l.Recover(ctx, store.Recovery{Alive: func(w string) bool { return w != "w-dead" }}, now))(t), "lost")
	})

	t.Run("I3_RecoverQueuesAgainAnAttemptNeverSent", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-dead", nil)) // the worker records every send from now on
		commit(t, s, "t1", effect("t1", "sent", now), effect("t1", "unsent", now))
		must(l.Begin(ctx, "sent", "w-dead", 0, now))(t)
		must(l.Begin(ctx, "unsent", "w-dead", 0, now))(t)
		// A claim handed to the worker in flight, never sent either.
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", Worker: "w-dead", Effects: []store.Effect{effect("t1", "handed", now)}}))(t)
		noErr(t, l.Sending(ctx, "w-dead", []store.AttemptRef{{Key: "sent", N: 1}}))

		later := now.Add(time.Second)
		got := must(l.Recover(ctx, store.Recovery{}, later))(t)
		byKey := map[string]store.Effect{}
		for _, e := range got {
			byKey[e.Key] = e
		}
		if len(got) != 3 {
			t.Fatalf("recovered %v, want sent, unsent and handed", keys(got))
		}
		if e := byKey["sent"]; e.State != store.Unknown || e.Error != store.InterruptedUnknown {
			t.Fatalf("an attempt recorded as sending = %+v", e)
		}
		for _, k := range []string{"unsent", "handed"} {
			e := must(l.Get(ctx, k))(t)
			a := e.Attempts[len(e.Attempts)-1]
			if e.State != store.Pending || e.InFlight || a.Outcome != store.Pending || a.End.IsZero() || a.Error != store.InterruptedUnsent {
				t.Fatalf("%s: an attempt never recorded as sending = %+v", k, e)
			}
		}
		due := keys(must(l.Due(ctx, later, 0))(t))
		slices.Sort(due)
		if !slices.Equal(due, []string{"handed", "unsent"}) {
			t.Fatalf("due after recovery = %v", due)
		}
		// Sent once, after recovery: a new attempt, recorded afresh.
		e := must(l.Begin(ctx, "unsent", "w-2", 1, later))(t)
		if n := len(e.Attempts); n != 2 || e.Attempts[1].N != 2 {
			t.Fatalf("attempts after recovery = %+v", e.Attempts)
		}
		wantKeys(t, must(l.Recover(ctx, store.Recovery{Alive: func(w string) bool { return w == "w-2" }}, later))(t))
	})

	t.Run("I3_RecoverReplaysWhereTheRecipientDedups", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-dead", nil))
		commit(t, s, "t1", effect("t1", "dedups", now), effect("t1", "plain", now))
		must(l.Begin(ctx, "dedups", "w-dead", 0, now))(t)
		must(l.Begin(ctx, "plain", "w-dead", 0, now))(t)
		noErr(t, l.Sending(ctx, "w-dead", []store.AttemptRef{{Key: "dedups", N: 1}, {Key: "plain", N: 1}}))
		replay := func(fx store.Effect) bool { return fx.Key == "dedups" }
		later := now.Add(time.Minute)
		got := must(l.Recover(ctx, store.Recovery{Replay: replay}, later))(t)
		if len(got) != 2 {
			t.Fatalf("recovered %v", keys(got))
		}
		e := must(l.Get(ctx, "dedups"))(t)
		if e.State != store.Pending || e.InFlight || e.Error != store.InterruptedReplayed || !e.NotBefore.Equal(now) {
			t.Fatalf("replayed effect = %+v (due at the attempt's start %v)", e, now)
		}
		if e := must(l.Get(ctx, "plain"))(t); e.State != store.Unknown {
			t.Fatalf("effect whose recipient does not dedup = %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, later, 0))(t), "dedups")
	})

	t.Run("SendingRefusedOnceRecoveredAsStopped", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-slow", nil))
		commit(t, s, "t1", effect("t1", "k", now))
		must(l.Begin(ctx, "k", "w-slow", 0, now))(t)
		wantKeys(t, must(l.Recover(ctx, store.Recovery{}, now))(t), "k")
		// The worker was only slow: it must not send what was queued again.
		wantErr(t, l.Sending(ctx, "w-slow", []store.AttemptRef{{Key: "k", N: 1}}), store.ErrLeaseLost)
		if e := must(l.Get(ctx, "k"))(t); e.State != store.Pending || e.InFlight {
			t.Fatalf("effect = %+v", e)
		}
	})

	t.Run("SettledAttemptsLeaveNoRecord", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-1", nil))
		// Many sends, each settled: the record stays small and a later
		// crash reads only what is in flight.
		for i := range 50 {
			k := fmt.Sprintf("k%02d", i)
			commit(t, s, "t1", effect("t1", k, now))
			must(l.Begin(ctx, k, "w-1", 0, now))(t)
			noErr(t, l.Sending(ctx, "w-1", []store.AttemptRef{{Key: k, N: 1}}))
			must(l.Settle(ctx, k, store.Outcome{State: store.Completed}, now))(t)
		}
		commit(t, s, "t1", effect("t1", "last", now))
		must(l.Begin(ctx, "last", "w-1", 0, now))(t)
		got := must(l.Recover(ctx, store.Recovery{}, now))(t)
		wantKeys(t, got, "last")
		if got[0].State != store.Pending {
			t.Fatalf("an attempt never recorded = %+v", got[0])
		}
	})

	t.Run("ListNewestFirstPerTask", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		for _, k := range []string{"a1", "a2", "a3"} {
			commit(t, s, "task-a", effect("task-a", k, time.Time{}))
			commit(t, s, "task-ab", effect("task-ab", k+"-other", time.Time{}))
		}
		wantKeys(t, must(l.List(ctx, "task-a", 0))(t), "a3", "a2", "a1")
		wantKeys(t, must(l.List(ctx, "task-a", 2))(t), "a3", "a2")
		wantKeys(t, must(l.List(ctx, "task-ab", 1))(t), "a3-other")
		wantKeys(t, must(l.List(ctx, "none", 0))(t))
	})
}

func must2(t *testing.T) func(time.Time, bool, error) (time.Time, bool) {
	return func(at time.Time, ok bool, err error) (time.Time, bool) {
		t.Helper()
		noErr(t, err)
		return at, ok
	}
}
