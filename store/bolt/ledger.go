package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// effectRecord is an effect as stored: the effect plus its creation
// sequence, which orders the per-task index and breaks NotBefore ties in
// the queue (first claimed, first sent).
type effectRecord struct {
	store.Effect
	Seq uint64 `json:"seq"`
}

type ledger Store

var _ store.Ledger = (*ledger)(nil)

func queueKey(notBefore time.Time, seq uint64, key string) []byte {
	k := make([]byte, 16+len(key))
	binary.BigEndian.PutUint64(k, nanos(notBefore))
	binary.BigEndian.PutUint64(k[8:], seq)
	copy(k[16:], key)
	return k
}

func taskKey(task string, seq uint64) []byte {
	k := make([]byte, 0, len(task)+9)
	k = append(k, task...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func getEffect(tx *bbolt.Tx, key string) (effectRecord, error) {
	v := tx.Bucket(bktEffects).Get([]byte(key))
	if v == nil {
		return effectRecord{}, store.ErrNotFound
	}
	var r effectRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return effectRecord{}, fmt.Errorf("corrupt effect record: %w", err)
	}
	return r, nil
}

func putEffect(tx *bbolt.Tx, r effectRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.Bucket(bktEffects).Put([]byte(r.Key), v)
}

func enqueue(tx *bbolt.Tx, r effectRecord) error {
	return tx.Bucket(bktQueue).Put(queueKey(r.NotBefore, r.Seq, r.Key), nil)
}

func dequeue(tx *bbolt.Tx, r effectRecord) error {
	return tx.Bucket(bktQueue).Delete(queueKey(r.NotBefore, r.Seq, r.Key))
}

func (l *ledger) Commit(ctx context.Context, c store.RunCommit) (store.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return store.CommitResult{}, err
	}
	s := (*Store)(l)
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
		for _, e := range c.Effects {
			if e.Key == "" {
				return errors.New("effect without key")
			}
		}
		if c.Snapshot != nil {
			if err := tx.Bucket(bktSnapshots).Put([]byte(c.TaskID), c.Snapshot); err != nil {
				return err
			}
		}
		now := s.now()
		effects := tx.Bucket(bktEffects)
		for _, e := range c.Effects {
			if effects.Get([]byte(e.Key)) != nil {
				res.Duplicates = append(res.Duplicates, e.Key)
				continue
			}
			seq, err := effects.NextSequence()
			if err != nil {
				return err
			}
			r := effectRecord{Effect: e, Seq: seq}
			if r.TaskID == "" {
				r.TaskID = c.TaskID
			}
			r.State, r.InFlight, r.Worker = store.Pending, false, ""
			if r.CreatedAt.IsZero() {
				r.CreatedAt = now
			}
			if r.NotBefore.IsZero() {
				r.NotBefore = now
			}
			r.UpdatedAt = now
			if err := putEffect(tx, r); err != nil {
				return err
			}
			if err := enqueue(tx, r); err != nil {
				return err
			}
			if err := tx.Bucket(bktByTask).Put(taskKey(r.TaskID, seq), []byte(r.Key)); err != nil {
				return err
			}
			res.Claimed = append(res.Claimed, e.Key)
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
	var r effectRecord
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		var err error
		r, err = getEffect(tx, key)
		return err
	})
	if err != nil {
		return store.Effect{}, fmt.Errorf("bolt: ledger get %q: %w", key, err)
	}
	return r.Effect, nil
}

func (l *ledger) List(ctx context.Context, taskID string, limit int) ([]store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Effect
	prefix := append([]byte(taskID), 0)
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bktByTask).Cursor()
		k, v := c.Seek(taskKey(taskID, ^uint64(0)))
		if k == nil || !bytes.Equal(k, taskKey(taskID, ^uint64(0))) {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, v = c.Prev() {
			r, err := getEffect(tx, string(v))
			if err != nil {
				return err
			}
			out = append(out, r.Effect)
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
		c := tx.Bucket(bktQueue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if binary.BigEndian.Uint64(k) > until {
				break
			}
			r, err := getEffect(tx, string(k[16:]))
			if err != nil {
				return err
			}
			out = append(out, r.Effect)
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
		k, _ := tx.Bucket(bktQueue).Cursor().First()
		if k == nil {
			return nil
		}
		r, err := getEffect(tx, string(k[16:]))
		if err != nil {
			return err
		}
		at, ok = r.NotBefore, true
		return nil
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("bolt: ledger next due: %w", err)
	}
	return at, ok, nil
}

// transition loads key, lets fn check and change it (fn must not write),
// stores the result and reports it.
func (l *ledger) transition(ctx context.Context, op, key string, fn func(tx *bbolt.Tx, r *effectRecord) error) (store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return store.Effect{}, err
	}
	var out effectRecord
	err := (*Store)(l).update(func(tx *bbolt.Tx) error {
		r, err := getEffect(tx, key)
		if err != nil {
			return err
		}
		if err := fn(tx, &r); err != nil {
			return err
		}
		out = r
		return putEffect(tx, r)
	})
	if err != nil {
		return store.Effect{}, fmt.Errorf("bolt: ledger %s %q: %w", op, key, err)
	}
	return out.Effect, nil
}

func illegal(r *effectRecord, op string) error {
	return fmt.Errorf("%s from %s (in flight %t): %w", op, r.State, r.InFlight, store.ErrIllegalTransition)
}

func (l *ledger) Begin(ctx context.Context, key, worker string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "begin", key, func(tx *bbolt.Tx, r *effectRecord) error {
		if r.State != store.Pending || r.InFlight {
			return illegal(r, "begin")
		}
		if err := dequeue(tx, *r); err != nil {
			return err
		}
		if err := tx.Bucket(bktInFlight).Put([]byte(r.Key), []byte(worker)); err != nil {
			return err
		}
		r.InFlight, r.Worker, r.UpdatedAt = true, worker, now
		r.Attempts = append(r.Attempts, store.Attempt{
			N: len(r.Attempts) + 1, Start: now, Part: r.PartsSent, By: worker, Outcome: store.Pending,
		})
		return nil
	})
}

func (l *ledger) Settle(ctx context.Context, key string, o store.Outcome, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "settle", key, func(tx *bbolt.Tx, r *effectRecord) error {
		if r.State != store.Pending || !r.InFlight {
			return illegal(r, "settle")
		}
		switch o.State {
		case store.Pending, store.Completed, store.Failed, store.Unknown:
		default:
			return fmt.Errorf("settle to %q: %w", o.State, store.ErrIllegalTransition)
		}
		if err := tx.Bucket(bktInFlight).Delete([]byte(r.Key)); err != nil {
			return err
		}
		if n := len(r.Attempts); n > 0 {
			a := &r.Attempts[n-1]
			a.End, a.Outcome, a.Error = now, o.State, o.Error
		}
		r.State, r.InFlight, r.Worker, r.UpdatedAt, r.Error = o.State, false, "", now, o.Error
		if o.ProviderID != "" {
			r.ProviderID = o.ProviderID
		}
		r.PartsSent = max(r.PartsSent, o.PartsSent)
		if o.State == store.Pending {
			r.NotBefore = o.RetryAt
			if r.NotBefore.IsZero() {
				r.NotBefore = now
			}
			return enqueue(tx, *r)
		}
		return nil
	})
}

func (l *ledger) Defer(ctx context.Context, key string, until time.Time, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "defer", key, func(tx *bbolt.Tx, r *effectRecord) error {
		if r.State != store.Pending || r.InFlight {
			return illegal(r, "defer")
		}
		if err := dequeue(tx, *r); err != nil {
			return err
		}
		if until.IsZero() {
			until = now
		}
		r.NotBefore, r.UpdatedAt = until, now
		return enqueue(tx, *r)
	})
}

func (l *ledger) Expire(ctx context.Context, key, reason string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "expire", key, func(tx *bbolt.Tx, r *effectRecord) error {
		if r.State != store.Pending || r.InFlight {
			return illegal(r, "expire")
		}
		if err := dequeue(tx, *r); err != nil {
			return err
		}
		r.State, r.Error, r.UpdatedAt = store.Failed, reason, now
		return nil
	})
}

// Redeliver queues an ended effect again, due now. The attempt history
// gains an entry by who. ExpiresAt is cleared: a human replay is not bound
// by the original deadline.
func (l *ledger) Redeliver(ctx context.Context, key, who string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "redeliver", key, func(tx *bbolt.Tx, r *effectRecord) error {
		if r.State == store.Pending || r.InFlight {
			return illegal(r, "redeliver")
		}
		r.Attempts = append(r.Attempts, store.Attempt{
			N: len(r.Attempts) + 1, Start: now, End: now, Part: r.PartsSent, By: who,
			Outcome: store.Pending, Error: store.RedeliveryMark,
		})
		r.State, r.Error, r.NotBefore, r.ExpiresAt, r.UpdatedAt = store.Pending, "", now, time.Time{}, now
		return enqueue(tx, *r)
	})
}

// interrupted is the reason recorded on effects whose worker died mid-attempt.
const interrupted = "interrupted: worker stopped during the attempt"

// Recover asks alive outside any transaction (it may consult the store),
// then ends each dead worker's attempt unless it settled meanwhile.
func (l *ledger) Recover(ctx context.Context, alive func(worker string) bool, now time.Time) ([]store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := (*Store)(l)
	type flight struct{ key, worker string }
	var flights []flight
	err := s.view(func(tx *bbolt.Tx) error {
		return tx.Bucket(bktInFlight).ForEach(func(k, v []byte) error {
			flights = append(flights, flight{string(k), string(v)})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger recover: %w", err)
	}
	var dead []flight
	for _, f := range flights {
		if !alive(f.worker) {
			dead = append(dead, f)
		}
	}
	if len(dead) == 0 {
		return nil, nil
	}
	var out []store.Effect
	err = s.update(func(tx *bbolt.Tx) error {
		out = nil
		inflight := tx.Bucket(bktInFlight)
		for _, f := range dead {
			if w := inflight.Get([]byte(f.key)); w == nil || string(w) != f.worker {
				continue // settled, or a new attempt began, since the scan
			}
			r, err := getEffect(tx, f.key)
			if err != nil {
				return err
			}
			if n := len(r.Attempts); n > 0 {
				a := &r.Attempts[n-1]
				a.End, a.Outcome, a.Error = now, store.Unknown, interrupted
			}
			r.State, r.InFlight, r.Worker, r.Error, r.UpdatedAt = store.Unknown, false, "", interrupted, now
			if err := putEffect(tx, r); err != nil {
				return err
			}
			if err := inflight.Delete([]byte(f.key)); err != nil {
				return err
			}
			out = append(out, r.Effect)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger recover: %w", err)
	}
	return out, nil
}
