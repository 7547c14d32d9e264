package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// scriptBucketTake keeps a bucket as its theoretical arrival time in µs
// (GCRA), as the embedded backend does: KEYS bucket; ARGV now, every,
// burst. Reply 0 (token taken) or the wait in µs. The key expires once
// the bucket is full again.
var scriptBucketTake = goredis.NewScript(`
local now, every, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nxt = tat + every
local wait = nxt - now - burst * every
if wait > 0 then return wait end
redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', math.floor((nxt - now) / 1000) + 1)
return 0
`)

// Take implements store.Buckets on one key, P rb:<name>.
func (b *buckets) Take(ctx context.Context, name string, every time.Duration, burst int, now time.Time) (time.Duration, error) {
	if every <= 0 || burst < 1 {
		return 0, errors.New("redis store: bucket take: every and burst must be positive")
	}
	us := max(every.Microseconds(), 1)
	wait, err := scriptBucketTake.Run(ctx, b.s.rdb, []string{b.s.keys.bucketKey(name)}, micros(now), us, burst).Int64()
	if err != nil {
		return 0, wrap("bucket take", err)
	}
	return time.Duration(wait) * time.Microsecond, nil
}
