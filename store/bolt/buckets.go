package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

type buckets Store

var _ store.Buckets = (*buckets)(nil)

// Take keeps each bucket as its theoretical arrival time (GCRA): the
// bucket is full at or before it, and each token taken moves it `every`
// later. A token is there while that time is at most burst*every ahead.
// One 8-byte record per bucket name (one per configured robot).
func (b *buckets) Take(ctx context.Context, name string, every time.Duration, burst int, now time.Time) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if every <= 0 || burst < 1 {
		return 0, errors.New("bolt: bucket take: every and burst must be positive")
	}
	s := (*Store)(b)
	key := []byte(name)
	var wait time.Duration
	err := s.update(func(tx *bbolt.Tx) error {
		bk := tx.Bucket(bktBuckets)
		tat := now
		if v := bk.Get(key); len(v) == 8 {
			if t := time.Unix(0, int64(binary.BigEndian.Uint64(v))); t.After(now) {
				tat = t
			}
		}
		next := tat.Add(every)
		wait = next.Sub(now) - time.Duration(burst)*every
		if wait > 0 {
			return nil
		}
		wait = 0
		return bk.Put(key, u64(nanos(next)))
	})
	if err != nil {
		return 0, fmt.Errorf("bolt: bucket take: %w", err)
	}
	return wait, nil
}
