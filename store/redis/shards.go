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

// Scheduling shards (I5; README, Sharded scheduling). Keys, all in the {P} slot with the
// leases they balance:
//
//	{P}sched:layout     the shard count the replicas share (absent: 1)
//	{P}sched:live       zset: replicas sharing the shards, scored by expiry (µs)
//	{P}lease:h:<name>   each shard's lease, named by store.ShardLease
//	{P}lease:n:<name>   its epoch counter
//
// Every replica runs one balancing step per quarter lease TTL; the step is
// one script, so two replicas never both claim a shard, and a replica's
// registration and its leases are renewed with the same expiry: when a
// replica dies, its leases and its place among the live replicas end
// together, and the survivors' fair share grows as its shards come free.

// DefaultShards is the shard count when Options.Shards is 0: one shard,
// one owner, as on the embedded store.
const DefaultShards = 1

// MaxShards bounds store.redis.shards: a balancing step reads every shard.
const MaxShards = 1024

func (k keyspace) layoutKey() string { return k.tagged + "sched:layout" }
func (k keyspace) liveKey() string   { return k.tagged + "sched:live" }

// errLayout reports that the replicas on the store share another shard count.
var errLayout = errors.New("scheduling shards differ")

// scriptBalance is one balancing step. KEYS: layout, live, the n shard
// leases, their n counters. ARGV: holder, n, now (µs), expiry (µs), expiry
// (RFC 3339), n epochs the holder believes it holds ("0": none), n shard
// numbers (1-based) in the holder's order of preference. A lease is the
// holder's only at the epoch it knows: one it holds at another epoch (it
// gave it up locally) is free like an expired one, and claiming it takes
// a new epoch. Reply {-1, layout} when the layout differs, else {live,
// then per shard: holder, epoch, expiry (µs)}.
var scriptBalance = goredis.NewScript(`
local n = tonumber(ARGV[2])
local lay = redis.call('GET', KEYS[1]) or '1'
if lay ~= ARGV[2] then return {-1, lay} end
if n == 1 then redis.call('SET', KEYS[1], '1') end
local now = tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local live = redis.call('ZCARD', KEYS[2])
local target = math.ceil(n / live)
local out, free, mine = {live}, {}, 0
for i = 1, n do
  local k = KEYS[2 + i]
  local h = redis.call('HMGET', k, 'holder', 'epoch', 'exp')
  local holder, epoch, exp = h[1] or '', h[2] or '0', tonumber(h[3] or '0') or 0
  if holder ~= '' and exp <= now then holder = '' end
  if holder == ARGV[1] and epoch == ARGV[5 + i] then
    redis.call('HSET', k, 'exp', ARGV[4], 'expt', ARGV[5])
    exp = tonumber(ARGV[4])
    mine = mine + 1
  elseif holder == ARGV[1] or holder == '' then
    holder = ''
    free[i] = true
  end
  out[2 + 3*(i-1)] = holder
  out[3 + 3*(i-1)] = epoch
  out[4 + 3*(i-1)] = tostring(exp)
end
for j = 1, n do
  if mine >= target then break end
  local i = tonumber(ARGV[5 + n + j])
  if free[i] then
    local e = redis.call('INCR', KEYS[2 + n + i])
    redis.call('HSET', KEYS[2 + i], 'holder', ARGV[1], 'epoch', e, 'exp', ARGV[4], 'expt', ARGV[5])
    out[2 + 3*(i-1)] = ARGV[1]
    out[3 + 3*(i-1)] = tostring(e)
    out[4 + 3*(i-1)] = ARGV[4]
    mine = mine + 1
  end
end
return out
`)

// scriptSwitchLayout moves the store to another shard count once no
// replica holds a shard of the old one. KEYS: layout, the scheduler lease
// and its counter, the old layout's leases. ARGV: old count, new count,
// now (µs). The old leases lose their holders, so a replica that was only
// paused cannot commit under them afterwards (I5). With more than one
// shard the one scheduler lease is parked (held by no replica, never
// expiring, at a new epoch), so a process that knows only that lease
// cannot take it and schedule beside the shard owners; back to one shard
// it is free again. Reply 1 switched, 0 the layout changed meanwhile, -1 a
// shard of the old layout is still held.
var scriptSwitchLayout = goredis.NewScript(`
if (redis.call('GET', KEYS[1]) or '1') ~= ARGV[1] then return 0 end
local now = tonumber(ARGV[3])
for i = 4, #KEYS do
  local h = redis.call('HMGET', KEYS[i], 'holder', 'exp')
  if h[1] and h[1] ~= '' and tonumber(h[2] or '0') > now then return -1 end
end
for i = 4, #KEYS do
  if redis.call('HGET', KEYS[i], 'holder') then
    redis.call('HSET', KEYS[i], 'holder', '', 'exp', '0', 'expt', '')
  end
end
if ARGV[2] == '1' then
  if redis.call('HGET', KEYS[2], 'holder') == '` + parkedHolder + `' then
    redis.call('HSET', KEYS[2], 'holder', '', 'exp', '0', 'expt', '')
  end
else
  local e = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[2], 'holder', '` + parkedHolder + `', 'epoch', e, 'exp', '9007199254740991', 'expt', '')
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`)

// parkedHolder holds the scheduler lease while scheduling is divided.
const parkedHolder = "(divided into shards)"

// scriptReleaseShards gives up leases still held at their epochs. KEYS:
// live, then the leases. ARGV: holder, "1" to leave the live replicas,
// then the epochs. Reply the number released.
var scriptReleaseShards = goredis.NewScript(`
if ARGV[2] == '1' then redis.call('ZREM', KEYS[1], ARGV[1]) end
local n = 0
for i = 2, #KEYS do
  local h = redis.call('HMGET', KEYS[i], 'holder', 'epoch')
  if h[1] == ARGV[1] and h[2] == ARGV[1 + i] then
    redis.call('HSET', KEYS[i], 'holder', '', 'exp', '0', 'expt', '')
    n = n + 1
  end
end
return n
`)

var _ store.ShardLeases = (*Store)(nil)

// Shards is the number of scheduling shards (store.redis.shards).
func (s *Store) Shards() int { return s.shards }

func (k keyspace) shardKeys(n int) (leases, counters []string) {
	leases, counters = make([]string, n), make([]string, n)
	for i := range n {
		name := store.ShardLease(i, n)
		leases[i], counters[i] = k.leaseKey(name), k.counterKey(name)
	}
	return leases, counters
}

// BalanceShards runs one balancing step (store.ShardLeases). When the
// replicas on the store shared another shard count, it moves the store to
// this one as soon as none of them holds a shard any more; until then it
// claims nothing and says so (store.ErrLeaseHeld).
func (s *Store) BalanceShards(ctx context.Context, holder string, ttl time.Duration, held map[int]store.Lease) (store.ShardView, error) {
	if holder == "" {
		return store.ShardView{}, errors.New("redis store: balance shards: empty holder")
	}
	for range 2 {
		v, layout, err := s.balance(ctx, holder, ttl, held)
		if !errors.Is(err, errLayout) {
			return v, err
		}
		if err := s.switchLayout(ctx, layout); err != nil {
			return store.ShardView{}, err
		}
	}
	return store.ShardView{}, fmt.Errorf("redis store: balance shards: the shard count keeps changing: %w", store.ErrLeaseHeld)
}

func (s *Store) balance(ctx context.Context, holder string, ttl time.Duration, held map[int]store.Lease) (store.ShardView, int, error) {
	n := s.shards
	now := s.now()
	exp := now.Add(ttl)
	expU, expT := expiryArgs(exp)
	leases, counters := s.keys.shardKeys(n)
	keys := append(append([]string{s.keys.layoutKey(), s.keys.liveKey()}, leases...), counters...)
	args := make([]any, 0, 5+2*n)
	args = append(args, holder, n, micros(now), expU, expT)
	for i := range n {
		epoch := "0"
		if l, ok := held[i]; ok && l.Holder == holder && l.Name == store.ShardLease(i, n) {
			epoch = strconv.FormatUint(l.Epoch, 10)
		}
		args = append(args, epoch)
	}
	for _, i := range store.ShardPreference(holder, n) {
		args = append(args, i+1)
	}
	res, err := scriptBalance.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return store.ShardView{}, 0, wrap("balance shards", err)
	}
	if code, _ := res[0].(int64); code == -1 {
		layout, _ := strconv.Atoi(fmt.Sprint(res[1]))
		return store.ShardView{}, layout, errLayout
	}
	if len(res) != 1+3*n {
		return store.ShardView{}, 0, fmt.Errorf("redis store: balance shards: unexpected reply of %d values", len(res))
	}
	live, _ := res[0].(int64)
	v := store.ShardView{Shards: n, Live: int(live), Mine: map[int]store.Lease{}, Holders: make([]string, n)}
	for i := range n {
		h, _ := res[1+3*i].(string)
		epoch, _ := strconv.ParseUint(fmt.Sprint(res[2+3*i]), 10, 64)
		expMicros, _ := strconv.ParseInt(fmt.Sprint(res[3+3*i]), 10, 64)
		v.Holders[i] = h
		switch {
		case h == holder:
			v.Mine[i] = store.Lease{Name: store.ShardLease(i, n), Holder: holder, Epoch: epoch, Expires: exp}
		case h != "":
			if at := time.UnixMicro(expMicros); v.NextExpiry.IsZero() || at.Before(v.NextExpiry) {
				v.NextExpiry = at
			}
		}
	}
	return v, 0, nil
}

// switchLayout moves the store from the shard count old to this store's.
func (s *Store) switchLayout(ctx context.Context, old int) error {
	if old < 1 || old > MaxShards {
		return fmt.Errorf("redis store: the stored shard count %d is not valid", old)
	}
	leases, _ := s.keys.shardKeys(old)
	keys := append([]string{s.keys.layoutKey(), s.keys.leaseKey(store.SchedulerLease), s.keys.counterKey(store.SchedulerLease)}, leases...)
	res, err := scriptSwitchLayout.Run(ctx, s.rdb, keys, old, s.shards, micros(s.now())).Int64()
	if err != nil {
		return wrap("switch shard count", err)
	}
	if res == -1 {
		return fmt.Errorf("redis store: replicas scheduling with %d shard(s) still run; this one (with %d) waits until they stop: %w",
			old, s.shards, store.ErrLeaseHeld)
	}
	return nil
}

// ReleaseShards gives up leases still held at their epochs
// (store.ShardLeases); leaving also takes holder out of the live replicas.
func (s *Store) ReleaseShards(ctx context.Context, holder string, leases []store.Lease, leaving bool) error {
	keys := make([]string, 0, 1+len(leases))
	keys = append(keys, s.keys.liveKey())
	leave := "0"
	if leaving {
		leave = "1"
	}
	args := make([]any, 0, 2+len(leases))
	args = append(args, holder, leave)
	for _, l := range leases {
		keys = append(keys, s.keys.leaseKey(l.Name))
		args = append(args, strconv.FormatUint(l.Epoch, 10))
	}
	return wrap("release shards", scriptReleaseShards.Run(ctx, s.rdb, keys, args...).Err())
}
