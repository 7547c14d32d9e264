package redis

import goredis "github.com/redis/go-redis/v9"

// The scripts below run atomically on the server. Each one names only keys
// of one cluster slot (see the package documentation): a script that
// crosses slots would be refused by Redis Cluster, and splitting it would
// lose the atomicity the guarantee rests on.

// luaFence is the shared fence check (I5): KEYS[1] is the lease, ARGV[1]
// "1" when fenced, ARGV[2] the epoch the caller holds. A fence is current
// while the lease is held (not released) at that epoch. Expiry alone does
// not stale it: a takeover takes a higher epoch, and that is what the check
// sees. A lease never taken fences nothing.
const luaFence = `
if ARGV[1] == '1' then
  local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch')
  if not h[1] or h[1] == '' or h[2] ~= ARGV[2] then return {1} end
end
`

// scriptCatalogPut: KEYS lease, record, ids; ARGV fenced, epoch, expect,
// value, id. Reply {0, newRevision} or {code}.
var scriptCatalogPut = goredis.NewScript(luaFence + `
local cur = redis.call('HGET', KEYS[2], 'rev') or '0'
if cur ~= ARGV[3] then return {2} end
local rev = redis.call('HINCRBY', KEYS[2], 'rev', 1)
redis.call('HSET', KEYS[2], 'val', ARGV[4])
redis.call('SADD', KEYS[3], ARGV[5])
return {0, rev}
`)

// scriptCatalogDelete: KEYS lease, record, ids, snapshot; ARGV fenced,
// epoch, expect, id. Reply a code.
var scriptCatalogDelete = goredis.NewScript(`
if ARGV[1] == '1' then
  local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch')
  if not h[1] or h[1] == '' or h[2] ~= ARGV[2] then return 1 end
end
local cur = redis.call('HGET', KEYS[2], 'rev')
if not cur then return 3 end
if cur ~= ARGV[3] then return 2 end
redis.call('DEL', KEYS[2], KEYS[4])
redis.call('SREM', KEYS[3], ARGV[4])
return 0
`)

// scriptCommit is the ledger commit (I1, I5): fence check against the lease, task revision
// check, snapshot write and claim-once of every effect with its queue entry,
// all or nothing.
//
// KEYS: lease, task record, snapshot, queue, commit sequence, in-flight
// set, then per effect its entry key and its task index key.
// ARGV: fenced, epoch, task revision ("0": unchecked), "1" to write the
// snapshot, snapshot, "1" to claim in flight (not queued), then per
// effect: JSON, queue score, effect key.
// Reply {0, claimed flags...} (1 claimed, 0 duplicate) or {code}.
var scriptCommit = goredis.NewScript(luaFence + `
if ARGV[3] ~= '0' then
  local rev = redis.call('HGET', KEYS[2], 'rev')
  if rev ~= ARGV[3] then return {2} end
end
if ARGV[4] == '1' then redis.call('SET', KEYS[3], ARGV[5]) end
local out = {0}
local n = (#KEYS - 6) / 2
for i = 1, n do
  local ek, ik = KEYS[6 + 2*i - 1], KEYS[6 + 2*i]
  local js, score, member = ARGV[6 + 3*i - 2], ARGV[6 + 3*i - 1], ARGV[6 + 3*i]
  if redis.call('SET', ek, js, 'NX') then
    if ARGV[6] == '1' then
      redis.call('SADD', KEYS[6], member)
    else
      redis.call('ZADD', KEYS[4], score, member)
    end
    redis.call('ZADD', ik, redis.call('INCR', KEYS[5]), member)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
`)

// scriptSwapEffect publishes one effect transition computed by the caller.
// KEYS: effect entry, queue, in-flight set, ended set, and optionally the
// sending record of the worker whose attempt ends. ARGV: SHA-1 of the
// entry as read (so a large payload is not sent twice), the new entry,
// effect key, queue action ("-": leave, "rem", or a score to add at),
// in-flight action ("-", "add", "rem"; "rem" also drops the key from the
// sending record), ended-set action ("rem", or the score of the end: the
// retention pruner's index). Reply 1 swapped, 0 the entry changed since it
// was read (re-read and decide again), -1 no such entry.
var scriptSwapEffect = goredis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if redis.sha1hex(cur) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[4] == 'rem' then
  redis.call('ZREM', KEYS[2], ARGV[3])
elseif ARGV[4] ~= '-' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
end
if ARGV[5] == 'add' then
  redis.call('SADD', KEYS[3], ARGV[3])
elseif ARGV[5] == 'rem' then
  redis.call('SREM', KEYS[3], ARGV[3])
  if KEYS[5] then redis.call('HDEL', KEYS[5], ARGV[3]) end
end
if ARGV[6] == 'rem' then
  redis.call('ZREM', KEYS[4], ARGV[3])
else
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[3])
end
return 1
`)

// scriptPrune deletes ended effects whose end is at or before the cutoff
// and is still their end (a redelivery takes an effect out of the ended
// set). KEYS: the ended set, then per effect its entry and its task index.
// ARGV: the cutoff score, then the effect keys. Reply: how many went.
var scriptPrune = goredis.NewScript(`
local n = 0
for i = 2, #ARGV do
  local m = ARGV[i]
  local score = redis.call('ZSCORE', KEYS[1], m)
  if score and tonumber(score) <= tonumber(ARGV[1]) then
    redis.call('DEL', KEYS[2*i - 2])
    redis.call('ZREM', KEYS[2*i - 1], m)
    redis.call('ZREM', KEYS[1], m)
    n = n + 1
  end
end
return n
`)

// scriptSending records attempts about to be sent in a worker's sending
// record (a hash: effect key -> attempt n, plus "!open"), unless recovery
// closed it. KEYS: the record, the set of workers with one. ARGV: worker,
// then key, n pairs. Reply 1 recorded, 0 closed (the worker was recovered
// as dead: it must not send).
var scriptSending = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[1], '!closed') == 1 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[1], '!open', '1')
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1])
end
return 1
`)

// scriptCloseSending closes a dead worker's sending record, so a worker
// that is only slow, not dead, can record nothing more, and returns the
// record as it was. KEYS: the record. Reply: HGETALL before closing.
var scriptCloseSending = goredis.NewScript(`
local all = redis.call('HGETALL', KEYS[1])
redis.call('HSET', KEYS[1], '!closed', '1')
return all
`)

// scriptLeaseAcquire: KEYS lease, counter; ARGV holder, now (µs), expiry
// (µs), expiry (RFC 3339). A new acquisition takes INCR of the counter, so
// epochs only grow; the holder of an unexpired lease renews at its epoch.
// Reply {1, epoch} or {0} (held by another).
var scriptLeaseAcquire = goredis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'exp')
if h[1] and h[1] ~= '' and h[3] and tonumber(h[3]) > tonumber(ARGV[2]) then
  if h[1] ~= ARGV[1] then return {0} end
  redis.call('HSET', KEYS[1], 'exp', ARGV[3], 'expt', ARGV[4])
  return {1, tonumber(h[2])}
end
local e = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'epoch', e, 'exp', ARGV[3], 'expt', ARGV[4])
return {1, e}
`)

// scriptLeaseRenew: KEYS lease; ARGV holder, epoch, now (µs), expiry (µs),
// expiry (RFC 3339). Reply 1 renewed, 0 lost (other holder or epoch, or
// expired).
var scriptLeaseRenew = goredis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'exp')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or not h[3] or tonumber(h[3]) <= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], 'exp', ARGV[4], 'expt', ARGV[5])
return 1
`)

// scriptLeaseRelease: KEYS lease; ARGV holder, epoch. The record (and its
// epoch) stays, without a holder. Reply 1 released, 0 not held.
var scriptLeaseRelease = goredis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'holder', '', 'exp', '0', 'expt', '')
return 1
`)

// scriptInboxAppend: KEYS items, all, unread, read, keys, seq (one
// principal, one slot); ARGV item JSON (without id), effect key, read flag,
// cap. Appending an effect key already stored returns the stored item.
// Beyond cap the oldest read items go first, then the oldest unread.
// Reply {1, id, read dropped, unread dropped} (stored) or {0, id, json}
// (already there).
var scriptInboxAppend = goredis.NewScript(`
if ARGV[2] ~= '' then
  local id = redis.call('HGET', KEYS[5], ARGV[2])
  if id then
    local js = redis.call('HGET', KEYS[1], id)
    if js then return {0, id, js} end
  end
end
local seq = redis.call('INCR', KEYS[6])
local id = string.format('%016d', seq)
redis.call('HSET', KEYS[1], id, ARGV[1])
redis.call('ZADD', KEYS[2], seq, id)
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[4], seq, id)
else
  redis.call('ZADD', KEYS[3], seq, id)
end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[5], ARGV[2], id) end
local cap = tonumber(ARGV[4])
local dropped = {0, 0}
while redis.call('ZCARD', KEYS[2]) > cap do
  local old = redis.call('ZRANGE', KEYS[4], 0, 0)
  local from = KEYS[4]
  if #old == 0 then
    old = redis.call('ZRANGE', KEYS[3], 0, 0)
    from = KEYS[3]
    dropped[2] = dropped[2] + 1
  else
    dropped[1] = dropped[1] + 1
  end
  local victim = old[1]
  local js = redis.call('HGET', KEYS[1], victim)
  if js then
    local ok, it = pcall(cjson.decode, js)
    if ok and type(it) == 'table' and type(it.effect_key) == 'string' and it.effect_key ~= '' then
      if redis.call('HGET', KEYS[5], it.effect_key) == victim then
        redis.call('HDEL', KEYS[5], it.effect_key)
      end
    end
  end
  redis.call('HDEL', KEYS[1], victim)
  redis.call('ZREM', KEYS[2], victim)
  redis.call('ZREM', from, victim)
end
return {1, id, dropped[1], dropped[2]}
`)

// scriptInboxMarkRead: KEYS all, unread, read; ARGV id ("" for all).
// Reply the number of items that changed, or -1 when id is unknown.
var scriptInboxMarkRead = goredis.NewScript(`
if ARGV[1] == '' then
  local ids = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  for i = 1, #ids, 2 do
    redis.call('ZADD', KEYS[3], ids[i + 1], ids[i])
  end
  redis.call('DEL', KEYS[2])
  return #ids / 2
end
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if score then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZADD', KEYS[3], score, ARGV[1])
  return 1
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
return -1
`)
