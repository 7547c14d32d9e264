package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// queueScore orders the queue by NotBefore; an effect without one (claimed
// before Claimed set it) is due from its creation.
func queueScore(e *store.Effect) string {
	t := e.NotBefore
	if t.IsZero() {
		t = e.CreatedAt
	}
	return strconv.FormatInt(micros(t), 10)
}

// dueAt is the instant from which a queued effect may be attempted.
func dueAt(e *store.Effect) time.Time {
	if e.NotBefore.IsZero() {
		return e.CreatedAt
	}
	return e.NotBefore
}

func (l *ledger) Commit(ctx context.Context, c store.RunCommit) (store.CommitResult, error) {
	s := l.s
	if err := store.CheckShard(c.Fence, c.TaskID); err != nil {
		return store.CommitResult{}, fmt.Errorf("redis store: commit: %w", err)
	}
	now := s.now()
	ck, fenced, epoch := s.fenceArgs(c.Fence)
	keys := make([]string, 0, 6+2*len(c.Effects))
	keys = append(keys, ck, s.keys.taskKey(c.TaskID), s.keys.snapKey(c.TaskID), s.keys.queueKey(), s.keys.seqKey(), s.keys.inflightKey())
	setSnap, snap := "0", []byte(nil)
	if c.Snapshot != nil {
		setSnap, snap = "1", c.Snapshot
	}
	inFlight := "0"
	if c.Worker != "" {
		inFlight = "1"
	}
	args := make([]any, 0, 6+3*len(c.Effects))
	args = append(args, fenced, epoch, strconv.FormatUint(c.TaskRevision, 10), setSnap, snap, inFlight)
	for _, e := range c.Effects {
		if e.Key == "" {
			return store.CommitResult{}, errors.New("redis store: commit: effect without key")
		}
		e = store.Claimed(e, c, now)
		js, err := json.Marshal(e)
		if err != nil {
			return store.CommitResult{}, fmt.Errorf("redis store: commit: encode effect: %w", err)
		}
		keys = append(keys, s.keys.effectKey(e.Key), s.keys.taskEffectsKey(e.TaskID))
		args = append(args, js, queueScore(&e), e.Key)
	}
	res, err := scriptCommit.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return store.CommitResult{}, wrap("commit", err)
	}
	if res[0] != replyOK {
		return store.CommitResult{}, scriptErr("commit", res[0])
	}
	var out store.CommitResult
	for i, e := range c.Effects {
		if res[1+i] == 1 {
			out.Claimed = append(out.Claimed, e.Key)
		} else {
			out.Duplicates = append(out.Duplicates, e.Key)
		}
	}
	return out, nil
}

func (l *ledger) Get(ctx context.Context, key string) (store.Effect, error) {
	e, _, err := l.read(ctx, key)
	return e, err
}

// read returns the effect and its stored encoding (the compare value of a
// later swap).
func (l *ledger) read(ctx context.Context, key string) (store.Effect, string, error) {
	raw, err := l.s.rdb.Get(ctx, l.s.keys.effectKey(key)).Result()
	if errors.Is(err, goredis.Nil) {
		return store.Effect{}, "", fmt.Errorf("redis store: effect: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Effect{}, "", wrap("effect get", err)
	}
	var e store.Effect
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return store.Effect{}, "", fmt.Errorf("redis store: decode effect: %w", err)
	}
	return e, raw, nil
}

// readMany loads the given effect keys in order, skipping missing ones.
func (l *ledger) readMany(ctx context.Context, keys []string) ([]store.Effect, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rk := make([]string, len(keys))
	for i, k := range keys {
		rk[i] = l.s.keys.effectKey(k)
	}
	vals, err := l.s.rdb.MGet(ctx, rk...).Result()
	if err != nil {
		return nil, wrap("effect list", err)
	}
	out := make([]store.Effect, 0, len(vals))
	for _, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue
		}
		var e store.Effect
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("redis store: decode effect: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (l *ledger) List(ctx context.Context, taskID string, limit int) ([]store.Effect, error) {
	stop := int64(-1)
	if limit > 0 {
		stop = int64(limit) - 1
	}
	keys, err := l.s.rdb.ZRevRange(ctx, l.s.keys.taskEffectsKey(taskID), 0, stop).Result()
	if err != nil {
		return nil, wrap("effect list", err)
	}
	return l.readMany(ctx, keys)
}

func (l *ledger) Due(ctx context.Context, now time.Time, limit int) ([]store.Effect, error) {
	by := &goredis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(micros(now), 10)}
	if limit > 0 {
		by.Count = int64(limit)
	}
	keys, err := l.s.rdb.ZRangeByScore(ctx, l.s.keys.queueKey(), by).Result()
	if err != nil {
		return nil, wrap("due", err)
	}
	all, err := l.readMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		// The score has microsecond resolution; the effect decides.
		if e.State == store.Pending && !e.InFlight && !dueAt(&e).After(now) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *ledger) NextDue(ctx context.Context) (time.Time, bool, error) {
	for range 8 {
		keys, err := l.s.rdb.ZRange(ctx, l.s.keys.queueKey(), 0, 0).Result()
		if err != nil {
			return time.Time{}, false, wrap("next due", err)
		}
		if len(keys) == 0 {
			return time.Time{}, false, nil
		}
		e, _, err := l.read(ctx, keys[0])
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return time.Time{}, false, err
		}
		if e.State != store.Pending || e.InFlight {
			continue // taken off the queue between the two reads
		}
		return dueAt(&e), true, nil
	}
	return time.Time{}, false, fmt.Errorf("redis store: next due: queue kept changing: %w", store.ErrConflict)
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// errNoChange ends a transition that has nothing to write.
var errNoChange = errors.New("no change")

// swap is the read–decide–publish loop of every effect transition. next
// computes the effect's new state from the stored effect, with the
// transitions of store.Progress; the queue, the in-flight set and the
// ended set follow that state. The script publishes it only if the stored
// entry is still the one read, else the loop reads again.
func (l *ledger) swap(ctx context.Context, op, key string,
	next func(e store.Effect) (store.Progress, error)) (store.Effect, error) {
	s := l.s
	for {
		e, raw, err := l.read(ctx, key)
		if err != nil {
			return store.Effect{}, err
		}
		keys := []string{s.keys.effectKey(key), s.keys.queueKey(), s.keys.inflightKey(), s.keys.endedKey()}
		if e.InFlight && e.Worker != "" {
			keys = append(keys, s.keys.sendingKey(e.Worker))
		}
		p, err := next(e)
		if errors.Is(err, errNoChange) {
			return e, nil
		}
		if err != nil {
			return store.Effect{}, fmt.Errorf("redis store: %s: %w", op, err)
		}
		e.SetProgress(p)
		js, err := json.Marshal(e)
		if err != nil {
			return store.Effect{}, fmt.Errorf("redis store: %s: encode effect: %w", op, err)
		}
		queue, inflight, ended := "rem", "rem", "rem"
		if p.Queued() {
			queue = queueScore(&e)
		}
		if p.Flying() {
			inflight = "add"
		}
		if p.State.Ended() && !p.InFlight {
			ended = strconv.FormatInt(micros(p.UpdatedAt), 10)
		}
		n, err := scriptSwapEffect.Run(ctx, s.rdb, keys,
			sha1hex(raw), js, key, queue, inflight, ended).Int64()
		if err != nil {
			return store.Effect{}, wrap(op, err)
		}
		switch n {
		case 1:
			return e, nil
		case -1:
			return store.Effect{}, fmt.Errorf("redis store: %s: %w", op, store.ErrNotFound)
		}
		if err := ctx.Err(); err != nil {
			return store.Effect{}, fmt.Errorf("redis store: %s: %w", op, err)
		}
	}
}

// Begin and Settle ride out a short store outage (see outageRetries): an
// attempt whose start or outcome is lost in flight would otherwise leave
// its effect pending and in flight under a live worker, where neither the
// dispatcher nor recovery would ever look at it again. A retry after a
// lost reply finds its own write already published (same worker and start
// time, or same outcome and end time) and returns it as done.

// outageRetries bounds the retries of Begin and Settle while the store is
// unavailable: with the backoff below, about two minutes.
const outageRetries = 64

func outageBackoff(try int) time.Duration {
	return min(50*time.Millisecond<<min(try, 6), 2*time.Second)
}

// throughOutage runs op until it succeeds, fails for a reason other than
// store.ErrUnavailable, the client is closed (that never heals), ctx ends
// or the retries run out. op is told whether an earlier try may have been
// published.
func throughOutage(ctx context.Context, op func(retry bool) (store.Effect, error)) (store.Effect, error) {
	for try := 0; ; try++ {
		e, err := op(try > 0)
		if err == nil || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, goredis.ErrClosed) || try >= outageRetries {
			return e, err
		}
		t := time.NewTimer(outageBackoff(try))
		select {
		case <-ctx.Done():
			t.Stop()
			return e, err
		case <-t.C:
		}
	}
}

func (l *ledger) Begin(ctx context.Context, key, worker string, seen int, now time.Time) (store.Effect, error) {
	return throughOutage(ctx, func(retry bool) (store.Effect, error) { return l.begin(ctx, key, worker, seen, now, retry) })
}

func (l *ledger) begin(ctx context.Context, key, worker string, seen int, now time.Time, retry bool) (store.Effect, error) {
	return l.swap(ctx, "begin", key, func(e store.Effect) (store.Progress, error) {
		if retry && e.InFlight && e.Worker == worker {
			if n := len(e.Attempts); n > 0 && e.Attempts[n-1].Start.Equal(now) {
				return store.Progress{}, errNoChange // the earlier try was published
			}
		}
		return e.Progress().Begin(worker, seen, now)
	})
}

func (l *ledger) Settle(ctx context.Context, key string, o store.Outcome, now time.Time) (store.Effect, error) {
	return throughOutage(ctx, func(retry bool) (store.Effect, error) { return l.settle(ctx, key, o, now, retry) })
}

func (l *ledger) settle(ctx context.Context, key string, o store.Outcome, now time.Time, retry bool) (store.Effect, error) {
	return l.swap(ctx, "settle", key, func(e store.Effect) (store.Progress, error) {
		if retry {
			// The earlier try may have been published and, for a Pending
			// outcome, the effect begun again since: look for our
			// outcome among all attempts, never settle someone else's.
			for _, a := range e.Attempts {
				if a.End.Equal(now) && a.Outcome == o.State {
					return store.Progress{}, errNoChange
				}
			}
		}
		return e.Progress().Settle(o, now)
	})
}

func (l *ledger) Defer(ctx context.Context, key string, until time.Time, reason string, now time.Time) (store.Effect, error) {
	return l.swap(ctx, "defer", key, func(e store.Effect) (store.Progress, error) {
		return e.Progress().Hold(until, reason, now)
	})
}

func (l *ledger) Expire(ctx context.Context, key, reason string, now time.Time) (store.Effect, error) {
	return l.swap(ctx, "expire", key, func(e store.Effect) (store.Progress, error) {
		return e.Progress().Expire(reason, now)
	})
}

func (l *ledger) Redeliver(ctx context.Context, key, who string, now time.Time) (store.Effect, error) {
	return l.swap(ctx, "redeliver", key, func(e store.Effect) (store.Progress, error) {
		return e.Progress().Redeliver(who, now)
	})
}

// closedSendingTTL is how long the closed sending record of a recovered
// worker is kept: a worker that was only slow finds it closed and sends
// nothing more.
const closedSendingTTL = 24 * time.Hour

func (l *ledger) Sending(ctx context.Context, worker string, refs []store.AttemptRef) error {
	args := make([]any, 0, 1+2*len(refs))
	args = append(args, worker)
	for _, r := range refs {
		args = append(args, r.Key, r.N)
	}
	n, err := scriptSending.Run(ctx, l.s.rdb, []string{l.s.keys.sendingKey(worker), l.s.keys.sendingSetKey()}, args...).Int64()
	if err != nil {
		return wrap("sending", err)
	}
	if n == 0 {
		return fmt.Errorf("redis store: sending: worker %q was recovered as stopped: %w", worker, store.ErrLeaseLost)
	}
	return nil
}

// sendingRecord is a dead worker's sending record, closed.
type sendingRecord struct {
	opened bool
	sent   map[string]string // key -> attempt n
}

func (l *ledger) closeSending(ctx context.Context, worker string) (sendingRecord, error) {
	all, err := scriptCloseSending.Run(ctx, l.s.rdb, []string{l.s.keys.sendingKey(worker)}).StringSlice()
	if err != nil {
		return sendingRecord{}, wrap("recover", err)
	}
	rec := sendingRecord{sent: map[string]string{}}
	for i := 0; i+1 < len(all); i += 2 {
		if all[i] == "!open" {
			rec.opened = true
		}
		rec.sent[all[i]] = all[i+1]
	}
	return rec, nil
}

func (l *ledger) Recover(ctx context.Context, r store.Recovery, now time.Time) ([]store.Effect, error) {
	alive := func(w string) bool { return r.Alive != nil && r.Alive(w) }
	keys, err := l.s.rdb.SMembers(ctx, l.s.keys.inflightKey()).Result()
	if err != nil {
		return nil, wrap("recover", err)
	}
	records := map[string]sendingRecord{}
	var out []store.Effect
	for _, key := range keys {
		var recovered bool
		e, err := l.swap(ctx, "recover", key, func(e store.Effect) (store.Progress, error) {
			recovered = false
			p := e.Progress()
			if !p.Flying() {
				return p, nil // stale in-flight entry: publishing the state as it is drops it
			}
			if alive(e.Worker) {
				return p, errNoChange
			}
			rec, ok := records[e.Worker]
			if !ok {
				var err error
				if rec, err = l.closeSending(ctx, e.Worker); err != nil {
					return p, err
				}
				records[e.Worker] = rec
			}
			mayBeSent := !rec.opened || rec.sent[e.Key] == strconv.Itoa(store.LastAttempt(e))
			state, reason, nb := r.Decide(e, mayBeSent, now)
			recovered = true
			return p.Recover(e.Worker, state, reason, nb, now)
		})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		if recovered {
			out = append(out, e)
		}
	}
	// Dead workers' records are closed (kept a while) once none of their
	// attempts is in flight any more.
	workers, err := l.s.rdb.SMembers(ctx, l.s.keys.sendingSetKey()).Result()
	if err != nil {
		return out, wrap("recover", err)
	}
	for _, w := range workers {
		if alive(w) {
			continue
		}
		if _, ok := records[w]; !ok {
			if _, err := l.closeSending(ctx, w); err != nil {
				return out, err
			}
		}
		pipe := l.s.rdb.TxPipeline()
		pipe.Del(ctx, l.s.keys.sendingKey(w))
		pipe.HSet(ctx, l.s.keys.sendingKey(w), "!closed", "1")
		pipe.Expire(ctx, l.s.keys.sendingKey(w), closedSendingTTL)
		pipe.SRem(ctx, l.s.keys.sendingSetKey(), w)
		if _, err := pipe.Exec(ctx); err != nil {
			return out, wrap("recover", err)
		}
	}
	return out, nil
}
