package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

func expiryArgs(t time.Time) (string, string) {
	return strconv.FormatInt(micros(t), 10), t.Format(time.RFC3339Nano)
}

func (ls *leases) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if holder == "" {
		return store.Lease{}, errors.New("redis store: lease acquire: empty holder")
	}
	now := ls.s.now()
	exp := now.Add(ttl)
	expU, expT := expiryArgs(exp)
	res, err := scriptLeaseAcquire.Run(ctx, ls.s.rdb,
		[]string{ls.s.keys.leaseKey(name), ls.s.keys.counterKey(name)},
		holder, micros(now), expU, expT).Int64Slice()
	if err != nil {
		return store.Lease{}, wrap("lease acquire", err)
	}
	if res[0] != 1 {
		return store.Lease{}, fmt.Errorf("redis store: lease %q: %w", name, store.ErrLeaseHeld)
	}
	return store.Lease{Name: name, Holder: holder, Epoch: uint64(res[1]), Expires: exp}, nil
}

func (ls *leases) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	now := ls.s.now()
	exp := now.Add(ttl)
	expU, expT := expiryArgs(exp)
	n, err := scriptLeaseRenew.Run(ctx, ls.s.rdb, []string{ls.s.keys.leaseKey(l.Name)},
		l.Holder, strconv.FormatUint(l.Epoch, 10), micros(now), expU, expT).Int64()
	if err != nil {
		return store.Lease{}, wrap("lease renew", err)
	}
	if n != 1 {
		return store.Lease{}, fmt.Errorf("redis store: lease %q: %w", l.Name, store.ErrLeaseLost)
	}
	l.Expires = exp
	return l, nil
}

func (ls *leases) Release(ctx context.Context, l store.Lease) error {
	_, err := scriptLeaseRelease.Run(ctx, ls.s.rdb, []string{ls.s.keys.leaseKey(l.Name)},
		l.Holder, strconv.FormatUint(l.Epoch, 10)).Int64()
	return wrap("lease release", err)
}

func (ls *leases) Current(ctx context.Context, name string) (store.Lease, error) {
	vals, err := ls.s.rdb.HMGet(ctx, ls.s.keys.leaseKey(name), "holder", "epoch", "expt").Result()
	if err != nil {
		return store.Lease{}, wrap("lease current", err)
	}
	epoch, ok := vals[1].(string)
	if !ok {
		return store.Lease{}, fmt.Errorf("redis store: lease %q: %w", name, store.ErrNotFound)
	}
	l := store.Lease{Name: name}
	l.Holder, _ = vals[0].(string)
	if l.Epoch, err = strconv.ParseUint(epoch, 10, 64); err != nil {
		return store.Lease{}, fmt.Errorf("redis store: lease %q has epoch %q: %w", name, epoch, err)
	}
	if t, _ := vals[2].(string); t != "" {
		if l.Expires, err = time.Parse(time.RFC3339Nano, t); err != nil {
			return store.Lease{}, fmt.Errorf("redis store: lease %q expiry: %w", name, err)
		}
	}
	return l, nil
}

// Mark sets the mark with SET NX and Redis expiry. A ttl of 0 or less keeps
// the mark until deleted; expiry is rounded up to whole milliseconds.
func (d *dedup) Mark(ctx context.Context, ns, id string, ttl time.Duration) (bool, error) {
	key := d.s.keys.dedupKey(ns, id)
	args := goredis.SetArgs{Mode: "NX"}
	if ttl > 0 {
		args.TTL = roundMillis(ttl)
	}
	err := d.s.rdb.SetArgs(ctx, key, "1", args).Err()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, wrap("dedup mark", err)
	}
	return true, nil
}

func roundMillis(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d
}

func (k *kv) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := k.s.rdb.Get(ctx, k.prefix+key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis store: kv get: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, wrap("kv get", err)
	}
	return b, nil
}

func (k *kv) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if value == nil {
		value = []byte{}
	}
	var exp time.Duration
	if ttl > 0 {
		exp = roundMillis(ttl)
	}
	return wrap("kv put", k.s.rdb.Set(ctx, k.prefix+key, value, exp).Err())
}

func (k *kv) Delete(ctx context.Context, key string) error {
	return wrap("kv delete", k.s.rdb.Del(ctx, k.prefix+key).Err())
}

// DefaultKeepRuns is the run history bound used when Append gets keep <= 0.
const DefaultKeepRuns = 30

func (r *runs) Append(ctx context.Context, taskID string, run []byte, keep int) error {
	if keep <= 0 {
		keep = DefaultKeepRuns
	}
	key := r.s.keys.runsKey(taskID)
	if run == nil {
		run = []byte{}
	}
	_, err := r.s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.LPush(ctx, key, run)
		p.LTrim(ctx, key, 0, int64(keep)-1)
		return nil
	})
	return wrap("runs append", err)
}

func (r *runs) List(ctx context.Context, taskID string, limit int) ([][]byte, error) {
	stop := int64(-1)
	if limit > 0 {
		stop = int64(limit) - 1
	}
	vals, err := r.s.rdb.LRange(ctx, r.s.keys.runsKey(taskID), 0, stop).Result()
	if err != nil {
		return nil, wrap("runs list", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
