package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// Retention: an ended effect (completed, failed, unknown) whose last
// change is older than Options.Retention is deleted with its claim and
// index entries, so the file and the memory it maps stop growing with the
// number of pushes ever made; freed pages are reused by later claims. A
// key pruned is claimable again: an event replayed after the retention
// is a new event.
//
// A pass looks at up to pruneScan effects in claim order from where the
// last one stopped, in the committer's round like any write, and deletes
// at most prunePerPass of them. It stops early at the first effect created
// after the cutoff: later claims are younger still, so the next pass
// starts over from the oldest. Effects kept (pending ones, and a hook's
// digest claims within store.ReplayWindow) are stepped over.
var (
	pruneScan    = 20000
	prunePerPass = 5000
)

// pruneEvery is how often the pruner looks, for a retention r.
func pruneEvery(r time.Duration) time.Duration {
	return min(max(r/8, time.Second), time.Minute)
}

// pruner deletes effects past retention until stop is closed.
func (s *Store) pruner(retention time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(pruneEvery(retention))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for {
			n, err := s.Prune(context.Background(), s.now().Add(-retention))
			if err != nil || n < prunePerPass {
				break // more next time
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}
}

// Prune deletes ended effects last changed before cutoff (one pass, see
// above) and returns how many it deleted.
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// Logged effects are in the file after a checkpoint; those changed
	// since stay in memory and are left for a later pass.
	if err := s.ov.checkpoint(); err != nil {
		return 0, fmt.Errorf("bolt: prune: %w", err)
	}
	var (
		deleted int
		next    uint64
	)
	from, now := s.pruneFrom.Load(), s.now()
	err := s.update(func(tx *bbolt.Tx) error {
		deleted, next = 0, from
		var old []uint64
		c := tx.Bucket(bktFxState).Cursor()
		bodies := tx.Bucket(bktFxBody)
		young := false
		k, v := c.Seek(seqKey(from))
		for n := 0; k != nil && n < pruneScan && len(old) < prunePerPass; k, v = c.Next() {
			n++
			seq := binary.BigEndian.Uint64(k)
			st, err := decodeState(v)
			if err != nil {
				return err
			}
			if st.State.Ended() && !st.InFlight && st.UpdatedAt.Before(cutoff) {
				if kept, err := keptPast(bodies, seq, now); err != nil {
					return err
				} else if !kept {
					old = append(old, seq)
				}
			} else if young, err = createdSince(bodies, seq, cutoff); err != nil {
				return err
			} else if young {
				break
			}
			next = seq + 1
		}
		if k == nil || young {
			next = 0 // the end, or the young claims: start over from the oldest
		}
		for _, seq := range old {
			ok, err := s.drop(tx, seq)
			if err != nil {
				return err
			}
			if ok {
				deleted++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("bolt: prune: %w", err)
	}
	s.pruneFrom.Store(next)
	return deleted, nil
}

// keptPast reports whether effect seq is kept past now whatever the
// retention (store.KeptUntil): it is stepped over like a queued one.
func keptPast(bodies *bbolt.Bucket, seq uint64, now time.Time) (bool, error) {
	v := bodies.Get(seqKey(seq))
	if v == nil {
		return false, fmt.Errorf("%w: no body for sequence %d", errCorruptEffect, seq)
	}
	b, _, err := decodeBody(v)
	return err == nil && store.KeptUntil(b.TaskID, b.RunID, b.CreatedAt).After(now), err
}

// createdSince reports whether effect seq was claimed at or after t.
func createdSince(bodies *bbolt.Bucket, seq uint64, t time.Time) (bool, error) {
	v := bodies.Get(seqKey(seq))
	if v == nil {
		return false, fmt.Errorf("%w: no body for sequence %d", errCorruptEffect, seq)
	}
	b, _, err := decodeBody(v)
	return err == nil && !b.CreatedAt.Before(t), err
}

// drop deletes effect seq and its claim and task entries, unless it is
// logged (the committer holds the overlay): its newer state is in memory.
func (s *Store) drop(tx *bbolt.Tx, seq uint64) (bool, error) {
	k := seqKey(seq)
	v := tx.Bucket(bktFxBody).Get(k)
	if v == nil {
		return false, fmt.Errorf("%w: no body for sequence %d", errCorruptEffect, seq)
	}
	b, _, err := decodeBody(v)
	if err != nil {
		return false, err
	}
	if s.ov.m[b.Key] != nil {
		return false, nil
	}
	for _, del := range []struct {
		bucket []byte
		key    []byte
	}{{bktFxClaim, []byte(b.Key)}, {bktFxBody, k}, {bktFxState, k}, {bktFxTask, taskKey(b.TaskID, seq)}} {
		if err := tx.Bucket(del.bucket).Delete(del.key); err != nil {
			return false, err
		}
	}
	return true, nil
}
