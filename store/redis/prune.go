package redis

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// Retention (docs/performance.md, Performance and footprint): every transition that
// ends an effect records it in the ended set, scored by the time of its
// end; a pass takes the oldest up to the cutoff, pruneBatch at a time,
// and deletes each with its task index entry unless it was redelivered
// meanwhile. One kept longer (a hook's digest claim within
// store.ReplayWindow) is scored again for when it may go. A key pruned may
// be claimed again.
const pruneBatch = 1000

var _ store.Pruner = (*Store)(nil)

// Prune deletes ended effects whose end is older than cutoff and returns
// how many it deleted (one batch).
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	score := strconv.FormatInt(micros(cutoff)-1, 10)
	members, err := s.rdb.ZRangeArgs(ctx, goredis.ZRangeArgs{Key: s.keys.endedKey(), Start: "-inf", Stop: score,
		ByScore: true, Count: pruneBatch}).Result()
	if err != nil {
		return 0, wrap("prune", err)
	}
	if len(members) == 0 {
		return 0, nil
	}
	entries := make([]string, len(members))
	for i, m := range members {
		entries[i] = s.keys.effectKey(m)
	}
	raw, err := s.rdb.MGet(ctx, entries...).Result()
	if err != nil {
		return 0, wrap("prune", err)
	}
	keys := make([]string, 0, 1+2*len(members))
	keys = append(keys, s.keys.endedKey())
	args := make([]any, 0, 1+len(members))
	args = append(args, score)
	now := s.now()
	var later []goredis.Z // kept past the retention (store.KeptUntil)
	for i, m := range members {
		index := s.keys.endedKey() // gone already: only the ended entry is left to drop
		if js, ok := raw[i].(string); ok {
			var e struct {
				Task    string    `json:"task"`
				Run     string    `json:"run"`
				Created time.Time `json:"created_at"`
			}
			if json.Unmarshal([]byte(js), &e) == nil {
				if until := store.KeptUntil(e.Task, e.Run, e.Created); until.After(now) {
					// Looked at again once it may go, as if it had ended
					// then; meanwhile the batch reaches the ones behind it.
					later = append(later, goredis.Z{Score: float64(micros(until) - micros(now) + micros(cutoff)), Member: m})
					continue
				}
				index = s.keys.taskEffectsKey(e.Task)
			}
		}
		keys = append(keys, entries[i], index)
		args = append(args, m)
	}
	if len(later) > 0 {
		// XX: one redelivered meanwhile left the ended set and stays out.
		if err := s.rdb.ZAddXX(ctx, s.keys.endedKey(), later...).Err(); err != nil {
			return 0, wrap("prune", err)
		}
	}
	if len(args) == 1 {
		return 0, nil
	}
	n, err := scriptPrune.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return 0, wrap("prune", err)
	}
	return n, nil
}

// pruner prunes every so often until ctx ends.
func (s *Store) pruner(ctx context.Context, retention time.Duration) {
	t := time.NewTicker(min(max(retention/8, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			n, err := s.Prune(ctx, s.now().Add(-retention))
			if err != nil || n < pruneBatch {
				break
			}
		}
	}
}
