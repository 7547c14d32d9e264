package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

type ledger Store

var _ store.Ledger = (*ledger)(nil)

func (l *ledger) Commit(ctx context.Context, c store.RunCommit) (store.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return store.CommitResult{}, err
	}
	s := (*Store)(l)
	// Everything that does not depend on the file is prepared here, outside
	// the shared write transaction.
	now := s.now()
	prepared := make([]encoded, len(c.Effects))
	for i, e := range c.Effects {
		if e.Key == "" {
			return store.CommitResult{}, fmt.Errorf("bolt: ledger commit for task %q: effect without key", c.TaskID)
		}
		if e.TaskID == "" {
			e.TaskID = c.TaskID
		}
		e.State, e.InFlight, e.Worker = store.Pending, false, ""
		if e.CreatedAt.IsZero() {
			e.CreatedAt = now
		}
		if e.NotBefore.IsZero() {
			e.NotBefore = now
		}
		e.UpdatedAt = now
		if c.Worker != "" {
			e.InFlight, e.Worker = true, c.Worker
			e.Attempts = []store.Attempt{{N: 1, Start: now, By: c.Worker, Outcome: store.Pending}}
		}
		var err error
		if prepared[i], err = encodeEffect(e); err != nil {
			return store.CommitResult{}, fmt.Errorf("bolt: ledger commit for task %q: %w", c.TaskID, err)
		}
	}
	var res store.CommitResult
	err := s.update(func(tx *bbolt.Tx) error {
		res = store.CommitResult{}
		if err := checkFence(tx, c.Fence); err != nil {
			return err
		}
		if c.TaskRevision != 0 {
			if got := revision(tx, c.TaskID); got != c.TaskRevision {
				return fmt.Errorf("task revision %d, run saw %d: %w", got, c.TaskRevision, store.ErrConflict)
			}
		}
		if c.Snapshot != nil {
			if err := tx.Bucket(bktSnapshots).Put([]byte(c.TaskID), c.Snapshot); err != nil {
				return err
			}
		}
		claims, bodies := tx.Bucket(bktFxClaim), tx.Bucket(bktFxBody)
		for _, e := range prepared {
			if claims.Get([]byte(e.key)) != nil {
				res.Duplicates = append(res.Duplicates, e.key)
				continue
			}
			seq, err := bodies.NextSequence()
			if err != nil {
				return err
			}
			if err := insert(tx, seq, e); err != nil {
				return err
			}
			res.Claimed = append(res.Claimed, e.key)
		}
		return nil
	})
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("bolt: ledger commit for task %q: %w", c.TaskID, err)
	}
	return res, nil
}

func (l *ledger) Get(ctx context.Context, key string) (store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return store.Effect{}, err
	}
	var f fx
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		var err error
		f, err = loadKey(tx, key)
		return err
	})
	if err != nil {
		return store.Effect{}, fmt.Errorf("bolt: ledger get %q: %w", key, err)
	}
	return f.effect(), nil
}

func (l *ledger) List(ctx context.Context, taskID string, limit int) ([]store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Effect
	prefix := append([]byte(taskID), 0)
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bktFxTask).Cursor()
		last := taskKey(taskID, ^uint64(0))
		k, _ := c.Seek(last)
		if k == nil || !bytes.Equal(k, last) {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, _ = c.Prev() {
			f, err := load(tx, binary.BigEndian.Uint64(k[len(prefix):]))
			if err != nil {
				return err
			}
			out = append(out, f.effect())
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger list %q: %w", taskID, err)
	}
	return out, nil
}

func (l *ledger) Due(ctx context.Context, now time.Time, limit int) ([]store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Effect
	until := nanos(now)
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bktFxQueue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) != 16 {
				return fmt.Errorf("%w: queue entry of %d bytes", errCorruptEffect, len(k))
			}
			if binary.BigEndian.Uint64(k) > until {
				break
			}
			f, err := load(tx, binary.BigEndian.Uint64(k[8:]))
			if err != nil {
				return err
			}
			out = append(out, f.effect())
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger due: %w", err)
	}
	return out, nil
}

func (l *ledger) NextDue(ctx context.Context) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	var (
		at time.Time
		ok bool
	)
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bktFxQueue).Cursor().First()
		if k == nil {
			return nil
		}
		if len(k) != 16 {
			return fmt.Errorf("%w: queue entry of %d bytes", errCorruptEffect, len(k))
		}
		st, err := getState(tx, binary.BigEndian.Uint64(k[8:]))
		if err != nil {
			return err
		}
		at, ok = st.NotBefore, true
		return nil
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("bolt: ledger next due: %w", err)
	}
	return at, ok, nil
}

// transition loads key's state, lets fn check and change it (fn may
// refuse before writing, or write index entries and succeed), stores the
// new state and reports the whole effect. Only the small state record is
// rewritten; the body is read for the answer.
func (l *ledger) transition(ctx context.Context, op, key string, fn func(tx *bbolt.Tx, seq uint64, st *effectState) error) (store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return store.Effect{}, err
	}
	var (
		st      effectState
		rawBody []byte
	)
	err := (*Store)(l).update(func(tx *bbolt.Tx) error {
		seq, err := lookup(tx, key)
		if err != nil {
			return err
		}
		if st, err = getState(tx, seq); err != nil {
			return err
		}
		if err := fn(tx, seq, &st); err != nil {
			return err
		}
		if err := putState(tx, seq, st); err != nil {
			return err
		}
		// The body is copied here and decoded after the transaction.
		v := tx.Bucket(bktFxBody).Get(seqKey(seq))
		if v == nil {
			return fmt.Errorf("%w: no body for sequence %d", errCorruptEffect, seq)
		}
		rawBody = append(rawBody[:0], v...)
		return nil
	})
	if err != nil {
		return store.Effect{}, fmt.Errorf("bolt: ledger %s %q: %w", op, key, err)
	}
	f := fx{st: st}
	if f.body, f.payload, err = decodeBody(rawBody); err != nil {
		return store.Effect{}, fmt.Errorf("bolt: ledger %s %q: %w", op, key, err)
	}
	return f.effect(), nil
}

func illegal(st *effectState, op string) error {
	return fmt.Errorf("%s from %s (in flight %t): %w", op, st.State, st.InFlight, store.ErrIllegalTransition)
}

func (l *ledger) Begin(ctx context.Context, key, worker string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "begin", key, func(tx *bbolt.Tx, seq uint64, st *effectState) error {
		if st.State != store.Pending || st.InFlight {
			return illegal(st, "begin")
		}
		if err := dequeue(tx, seq, st.NotBefore); err != nil {
			return err
		}
		fl := tx.Bucket(bktFxFlight)
		fl.FillPercent = fillState
		if err := fl.Put(seqKey(seq), []byte(worker)); err != nil {
			return err
		}
		st.InFlight, st.Worker, st.UpdatedAt = true, worker, now
		st.Attempts = append(st.Attempts, store.Attempt{
			N: len(st.Attempts) + 1, Start: now, Part: st.PartsSent, By: worker, Outcome: store.Pending,
		})
		return nil
	})
}

func (l *ledger) Settle(ctx context.Context, key string, o store.Outcome, now time.Time) (store.Effect, error) {
	var worker string
	e, err := l.transition(ctx, "settle", key, func(tx *bbolt.Tx, seq uint64, st *effectState) error {
		if st.State != store.Pending || !st.InFlight {
			return illegal(st, "settle")
		}
		worker = st.Worker
		switch o.State {
		case store.Pending, store.Completed, store.Failed, store.Unknown:
		default:
			return fmt.Errorf("settle to %q: %w", o.State, store.ErrIllegalTransition)
		}
		if err := tx.Bucket(bktFxFlight).Delete(seqKey(seq)); err != nil {
			return err
		}
		if n := len(st.Attempts); n > 0 {
			a := &st.Attempts[n-1]
			a.End, a.Outcome, a.Error = now, o.State, o.Error
		}
		st.State, st.InFlight, st.Worker, st.UpdatedAt, st.Error = o.State, false, "", now, o.Error
		if o.ProviderID != "" {
			st.ProviderID = o.ProviderID
		}
		st.PartsSent = max(st.PartsSent, o.PartsSent)
		if o.State == store.Pending {
			st.NotBefore = o.RetryAt
			if st.NotBefore.IsZero() {
				st.NotBefore = now
			}
			return enqueue(tx, seq, st.NotBefore)
		}
		return nil
	})
	if err == nil {
		// Committed: the attempt's sending record is no longer needed.
		(*Store)(l).jr.settled(worker, key)
	}
	return e, err
}

func (l *ledger) Defer(ctx context.Context, key string, until time.Time, reason string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "defer", key, func(tx *bbolt.Tx, seq uint64, st *effectState) error {
		if st.State != store.Pending || st.InFlight {
			return illegal(st, "defer")
		}
		if err := dequeue(tx, seq, st.NotBefore); err != nil {
			return err
		}
		if until.IsZero() {
			until = now
		}
		st.NotBefore, st.UpdatedAt = until, now
		if reason != "" {
			st.Error = reason
		}
		return enqueue(tx, seq, st.NotBefore)
	})
}

func (l *ledger) Expire(ctx context.Context, key, reason string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "expire", key, func(tx *bbolt.Tx, seq uint64, st *effectState) error {
		if st.State != store.Pending || st.InFlight {
			return illegal(st, "expire")
		}
		if err := dequeue(tx, seq, st.NotBefore); err != nil {
			return err
		}
		st.State, st.Error, st.UpdatedAt = store.Failed, reason, now
		return nil
	})
}

// Redeliver queues an ended effect again, due now. The attempt history
// gains an entry by who. ExpiresAt is cleared: a human replay is not bound
// by the original deadline.
func (l *ledger) Redeliver(ctx context.Context, key, who string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "redeliver", key, func(tx *bbolt.Tx, seq uint64, st *effectState) error {
		if st.State == store.Pending || st.InFlight {
			return illegal(st, "redeliver")
		}
		st.Attempts = append(st.Attempts, store.Attempt{
			N: len(st.Attempts) + 1, Start: now, End: now, Part: st.PartsSent, By: who,
			Outcome: store.Pending, Error: store.RedeliveryMark,
		})
		st.State, st.Error, st.NotBefore, st.ExpiresAt, st.UpdatedAt = store.Pending, "", now, time.Time{}, now
		return enqueue(tx, seq, st.NotBefore)
	})
}

// Sending records refs in worker's journal (journal.go): written, not
// synced; it only has to outlive the process (see journal.go).
func (l *ledger) Sending(ctx context.Context, worker string, refs []store.AttemptRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w, err := (*Store)(l).jr.open(worker)
	if err != nil {
		return fmt.Errorf("bolt: sending journal of %q: %v: %w", worker, err, store.ErrUnavailable)
	}
	if len(refs) == 0 {
		return nil
	}
	return w.record(refs)
}

// Recover asks r.Alive outside any transaction (it may consult the
// store), reads each dead worker's sending journal, lets r.Replay decide
// about attempts that may have been sent, then ends each dead worker's
// attempt unless it settled meanwhile, and drops the journals it read.
func (l *ledger) Recover(ctx context.Context, r store.Recovery, now time.Time) ([]store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := (*Store)(l)
	alive := func(w string) bool { return r.Alive != nil && r.Alive(w) }
	type flight struct {
		seq    uint64
		worker string
		fx     store.Effect
	}
	var flights []flight
	err := s.view(func(tx *bbolt.Tx) error {
		return tx.Bucket(bktFxFlight).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("%w: in-flight entry of %d bytes", errCorruptEffect, len(k))
			}
			seq := binary.BigEndian.Uint64(k)
			f, err := load(tx, seq)
			if err != nil {
				return err
			}
			flights = append(flights, flight{seq, string(v), f.effect()})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger recover: %w", err)
	}
	type decision struct {
		flight
		state     store.EffectState
		reason    string
		notBefore time.Time
	}
	type record struct {
		opened bool
		sent   map[string][]int
	}
	journals := map[string]record{}
	var dead []decision
	for _, f := range flights {
		if alive(f.worker) {
			continue
		}
		rec, ok := journals[f.worker]
		if !ok {
			opened, sent, err := s.jr.read(f.worker)
			if err != nil {
				return nil, fmt.Errorf("bolt: ledger recover: sending journal: %w", err)
			}
			rec = record{opened, sent}
			journals[f.worker] = rec
		}
		mayBeSent := !rec.opened || slices.Contains(rec.sent[f.fx.Key], store.LastAttempt(f.fx))
		state, reason, nb := r.Decide(f.fx, mayBeSent, now)
		dead = append(dead, decision{f, state, reason, nb})
	}
	var out []store.Effect
	if len(dead) > 0 {
		err = s.update(func(tx *bbolt.Tx) error {
			out = nil
			inflight := tx.Bucket(bktFxFlight)
			for _, d := range dead {
				k := seqKey(d.seq)
				if w := inflight.Get(k); w == nil || string(w) != d.worker {
					continue // settled, or a new attempt began, since the scan
				}
				f, err := load(tx, d.seq)
				if err != nil {
					return err
				}
				if n := len(f.st.Attempts); n > 0 {
					a := &f.st.Attempts[n-1]
					a.End, a.Outcome, a.Error = now, d.state, d.reason
				}
				f.st.State, f.st.InFlight, f.st.Worker, f.st.Error, f.st.UpdatedAt = d.state, false, "", d.reason, now
				if d.state == store.Pending {
					f.st.NotBefore = d.notBefore
					if err := enqueue(tx, d.seq, f.st.NotBefore); err != nil {
						return err
					}
				}
				if err := putState(tx, d.seq, f.st); err != nil {
					return err
				}
				if err := inflight.Delete(k); err != nil {
					return err
				}
				out = append(out, f.effect())
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("bolt: ledger recover: %w", err)
		}
	}
	// Every dead worker's attempt is ended now: its journal is done with.
	if err := s.jr.forget(alive); err != nil {
		return out, fmt.Errorf("bolt: ledger recover: sending journal: %w", err)
	}
	return out, nil
}
