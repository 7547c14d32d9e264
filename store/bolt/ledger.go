package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
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
	decoded := make([]fx, len(c.Effects))
	for i, e := range c.Effects {
		if e.Key == "" {
			return store.CommitResult{}, fmt.Errorf("bolt: ledger commit for task %q: effect without key", c.TaskID)
		}
		e = store.Claimed(e, c, now)
		var err error
		if prepared[i], err = encodeEffect(e); err != nil {
			return store.CommitResult{}, fmt.Errorf("bolt: ledger commit for task %q: %w", c.TaskID, err)
		}
		decoded[i] = splitEffect(e, 0)
	}
	if c.Fence.IsZero() && c.TaskRevision == 0 && c.Snapshot == nil {
		// Nothing to check against the file but the claims: logged.
		op := &logOp{claim: prepared, fx: decoded}
		if err := s.gc.queue(op); err != nil {
			return store.CommitResult{}, fmt.Errorf("bolt: ledger commit for task %q: %w", c.TaskID, err)
		}
		return op.res, nil
	}
	var res store.CommitResult
	err := s.update(func(tx *bbolt.Tx) error {
		res = store.CommitResult{}
		if err := checkTaskFence(tx, c.Fence, c.TaskID); err != nil {
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
			// The committer holds the overlay through the round.
			if claims.Get([]byte(e.key)) != nil || s.ov.m[e.key] != nil {
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
	e, ok, err := l.ov.get(key)
	if err != nil || ok {
		return e, err
	}
	var f fx
	err = (*Store)(l).view(func(tx *bbolt.Tx) error {
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
	// Logged effects reach the file first, so one ordered scan lists all.
	if err := l.ov.checkpoint(); err != nil {
		return nil, fmt.Errorf("bolt: ledger list %q: %w", taskID, err)
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
		return eachQueued(tx, func(at, seq uint64) (bool, error) {
			if at > until || (limit > 0 && len(out) >= limit) {
				return false, nil
			}
			f, err := load(tx, seq)
			out = append(out, f.effect())
			return err == nil, err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger due: %w", err)
	}
	logged, err := l.ov.queued(now)
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger due: %w", err)
	}
	out = append(l.ov.fileCopies(out), logged...)
	slices.SortStableFunc(out, func(a, b store.Effect) int { return a.NotBefore.Compare(b.NotBefore) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (l *ledger) NextDue(ctx context.Context) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	queued, err := l.ov.queued(time.Time{})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("bolt: ledger next due: %w", err)
	}
	// The file's first entry that is not a stale copy of a logged effect.
	err = (*Store)(l).view(func(tx *bbolt.Tx) error {
		return eachQueued(tx, func(_, seq uint64) (bool, error) {
			f, err := load(tx, seq)
			if err != nil {
				return false, err
			}
			if fc := l.ov.fileCopies([]store.Effect{f.effect()}); len(fc) == 1 {
				queued = append(queued, fc[0])
				return false, nil
			}
			return true, nil
		})
	})
	if err != nil || len(queued) == 0 {
		if err != nil {
			err = fmt.Errorf("bolt: ledger next due: %w", err)
		}
		return time.Time{}, false, err
	}
	return slices.MinFunc(queued, func(a, b store.Effect) int { return a.NotBefore.Compare(b.NotBefore) }).NotBefore, true, nil
}

// eachQueued calls fn with each queue entry's due time and sequence, in
// due order, while fn says to go on.
func eachQueued(tx *bbolt.Tx, fn func(at, seq uint64) (bool, error)) error {
	c := tx.Bucket(bktFxQueue).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) != 16 {
			return fmt.Errorf("%w: queue entry of %d bytes", errCorruptEffect, len(k))
		}
		more, err := fn(binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:]))
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// step is one ledger transition: a store.Progress method with its
// arguments bound. It returns the new state, or refuses before changing
// anything. The same steps run on the file (transition) and on logged
// effects (overlay.go); the queue and in-flight entries follow the state
// (reindex).
type step func(store.Progress) (store.Progress, error)

// transition applies st to key's effect: in memory and the ledger log
// when the effect is logged (overlay.go), else in the file, where only
// the small state record and the index entries it calls for are
// rewritten. It reports the whole effect.
func (l *ledger) transition(ctx context.Context, op, key string, st step) (store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return store.Effect{}, err
	}
	var (
		state   effectState
		rawBody []byte
		inFile  bool
	)
	lop := &logOp{key: key, step: st, fileFn: func(tx *bbolt.Tx) error {
		inFile = true
		seq, err := lookup(tx, key)
		if err != nil {
			return err
		}
		old, err := getState(tx, seq)
		if err != nil {
			return err
		}
		if state, err = st(old); err != nil {
			return err
		}
		if err := reindex(tx, seq, &old, state); err != nil {
			return err
		}
		if err := putState(tx, seq, state); err != nil {
			return err
		}
		// The body is copied here and decoded after the transaction.
		v := tx.Bucket(bktFxBody).Get(seqKey(seq))
		if v == nil {
			return fmt.Errorf("%w: no body for sequence %d", errCorruptEffect, seq)
		}
		rawBody = append(rawBody[:0], v...)
		return nil
	}}
	if err := (*Store)(l).gc.queue(lop); err != nil {
		return store.Effect{}, fmt.Errorf("bolt: ledger %s %q: %w", op, key, err)
	}
	if !inFile {
		return lop.out.effect(), nil
	}
	f := fx{st: state}
	var err error
	if f.body, f.payload, err = decodeBody(rawBody); err != nil {
		return store.Effect{}, fmt.Errorf("bolt: ledger %s %q: %w", op, key, err)
	}
	return f.effect(), nil
}

func (l *ledger) Begin(ctx context.Context, key, worker string, seen int, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "begin", key, func(p store.Progress) (store.Progress, error) { return p.Begin(worker, seen, now) })
}

func (l *ledger) Settle(ctx context.Context, key string, o store.Outcome, now time.Time) (store.Effect, error) {
	var worker string
	e, err := l.transition(ctx, "settle", key, func(p store.Progress) (store.Progress, error) {
		worker = p.Worker
		return p.Settle(o, now)
	})
	if err == nil {
		// Committed: the attempt's sending record is no longer needed.
		(*Store)(l).jr.settled(worker, key)
	}
	return e, err
}

func (l *ledger) Defer(ctx context.Context, key string, until time.Time, reason string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "defer", key, func(p store.Progress) (store.Progress, error) { return p.Hold(until, reason, now) })
}

func (l *ledger) Expire(ctx context.Context, key, reason string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "expire", key, func(p store.Progress) (store.Progress, error) { return p.Expire(reason, now) })
}

func (l *ledger) Redeliver(ctx context.Context, key, who string, now time.Time) (store.Effect, error) {
	return l.transition(ctx, "redeliver", key, func(p store.Progress) (store.Progress, error) { return p.Redeliver(who, now) })
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
// store), reads each dead worker's sending journal, lets r.Decide say
// what becomes of attempts that may have been sent, then ends each dead
// worker's attempt unless it settled meanwhile, and drops the journals it
// read.
func (l *ledger) Recover(ctx context.Context, r store.Recovery, now time.Time) ([]store.Effect, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := (*Store)(l)
	alive := func(w string) bool { return r.Alive != nil && r.Alive(w) }
	flights, err := l.flying()
	if err != nil {
		return nil, fmt.Errorf("bolt: ledger recover: %w", err)
	}
	type record struct {
		opened bool
		sent   map[string][]int
	}
	journals := map[string]record{}
	var steps []func() (store.Effect, error)
	for _, f := range flights {
		if alive(f.Worker) {
			continue
		}
		rec, ok := journals[f.Worker]
		if !ok {
			opened, sent, err := s.jr.read(f.Worker)
			if err != nil {
				return nil, fmt.Errorf("bolt: ledger recover: sending journal: %w", err)
			}
			rec = record{opened, sent}
			journals[f.Worker] = rec
		}
		mayBeSent := !rec.opened || slices.Contains(rec.sent[f.Key], store.LastAttempt(f))
		state, reason, nb := r.Decide(f, mayBeSent, now)
		st := func(p store.Progress) (store.Progress, error) { return p.Recover(f.Worker, state, reason, nb, now) }
		steps = append(steps, func() (store.Effect, error) { return l.transition(ctx, "recover", f.Key, st) })
	}
	// Queued at once, the steps share a round.
	got := make([]store.Effect, len(steps))
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], errs[i] = step() }()
	}
	wg.Wait()
	var out []store.Effect
	for i, err := range errs {
		switch {
		case err == nil:
			out = append(out, got[i])
		case !errors.Is(err, store.ErrIllegalTransition): // settled, or begun again, since the scan
			return out, fmt.Errorf("bolt: ledger recover: %w", err)
		}
	}
	// Every dead worker's attempt is ended now: its journal is done with.
	if err := s.jr.forget(alive); err != nil {
		return out, fmt.Errorf("bolt: ledger recover: sending journal: %w", err)
	}
	return out, nil
}

// flying returns the effects in flight, logged ones and the file's.
func (l *ledger) flying() ([]store.Effect, error) {
	var fromFile []store.Effect
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		return tx.Bucket(bktFxFlight).ForEach(func(k, _ []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("%w: in-flight entry of %d bytes", errCorruptEffect, len(k))
			}
			f, err := load(tx, binary.BigEndian.Uint64(k))
			if err != nil {
				return err
			}
			fromFile = append(fromFile, f.effect())
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	logged, err := l.ov.inFlight()
	return append(l.ov.fileCopies(fromFile), logged...), err
}
