package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// The history keys are in keys.go. hist:oldest lives in another slot than
// a log's keys; it is written after the log's own script and read only to
// know when the next turn expires, so a crash between the two leaves a
// stale hint that the next append or prune corrects, never a lost or kept
// turn.

// History returns the conversation history.
func (s *Store) History() store.History { return s.history }

// luaHistDrop defines drop(m): one turn and its index entries. KEYS[1..4]
// are t, w, i, a; ARGV[1] is the index key prefix.
const luaHistDrop = `
local function drop(m)
  local w = redis.call('HGET', KEYS[2], m)
  if w then
    for term in string.gmatch(w, '[^\n]+') do redis.call('ZREM', ARGV[1] .. term, m) end
  end
  redis.call('HDEL', KEYS[1], m)
  redis.call('HDEL', KEYS[2], m)
  redis.call('ZREM', KEYS[3], m)
  redis.call('ZREM', KEYS[4], m)
end
local function oldest()
  local o = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return o[2] or ''
end
`

// scriptHistAppend: KEYS t, w, i, a, seq, then one index key per term;
// ARGV prefix, JSON, time (µs), keep, cut-off (µs), terms joined.
// Reply {seq, oldest time or ”}.
var scriptHistAppend = goredis.NewScript(luaHistDrop + `
local seq = redis.call('INCR', KEYS[5])
redis.call('HSET', KEYS[1], seq, ARGV[2])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[2], seq, ARGV[6]) end
redis.call('ZADD', KEYS[3], seq, seq)
redis.call('ZADD', KEYS[4], ARGV[3], seq)
for i = 6, #KEYS do redis.call('ZADD', KEYS[i], seq, seq) end
local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[4])
if over > 0 then
  for _, m in ipairs(redis.call('ZRANGE', KEYS[3], 0, over - 1)) do drop(m) end
end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[5])) do drop(m) end
return {seq, oldest()}
`)

// scriptHistPrune: KEYS t, w, i, a; ARGV prefix, cut-off (µs). Reply the
// oldest time left or ”.
var scriptHistPrune = goredis.NewScript(luaHistDrop + `
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[2], 'LIMIT', 0, 1000)) do drop(m) end
return oldest()
`)

// scriptHistForget: KEYS t, w, i, a; ARGV prefix, low seq (exclusive),
// high seq (inclusive), principal (” = every turn), batch size. It
// deletes the matching turns among the first batch in the range. Reply
// {deleted, last seq looked at or -1 when the range is done, oldest time
// or ”}.
var scriptHistForget = goredis.NewScript(luaHistDrop + `
local batch = tonumber(ARGV[5])
local ms = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[2], ARGV[3], 'LIMIT', 0, batch)
local n = 0
for _, m in ipairs(ms) do
  local hit = ARGV[4] == ''
  if not hit then
    local js = redis.call('HGET', KEYS[1], m)
    hit = js and cjson.decode(js).principal == ARGV[4]
  end
  if hit then drop(m); n = n + 1 end
end
local last = -1
if #ms == batch then last = tonumber(ms[#ms]) end
return {n, last, oldest()}
`)

// scriptHistSearch: KEYS t, a, then one index key per term; ARGV highest
// score ('+inf' or '(seq'), cut-off (µs), limit. It walks the shortest
// posting list newest first and keeps the turns every other term indexes
// too, stopping at the first turn older than the cut-off. Reply seq,
// JSON pairs.
var scriptHistSearch = goredis.NewScript(`
local best, bestN = 0, -1
for i = 3, #KEYS do
  local n = redis.call('ZCARD', KEYS[i])
  if n == 0 then return {} end
  if bestN < 0 or n < bestN then best, bestN = i, n end
end
local out, max, limit, cut = {}, ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[2])
while #out < 2 * limit do
  local batch = redis.call('ZREVRANGEBYSCORE', KEYS[best], max, '-inf', 'LIMIT', 0, 200)
  if #batch == 0 then break end
  for _, m in ipairs(batch) do
    local at = redis.call('ZSCORE', KEYS[2], m)
    if at and tonumber(at) < cut then return out end
    local ok = true
    for i = 3, #KEYS do
      if i ~= best and not redis.call('ZSCORE', KEYS[i], m) then ok = false; break end
    end
    if ok then
      local js = redis.call('HGET', KEYS[1], m)
      if js then out[#out + 1] = m; out[#out + 1] = js end
      if #out >= 2 * limit then return out end
    end
  end
  max = '(' .. batch[#batch]
end
return out
`)

func histID(seq int64) string { return fmt.Sprintf("%016x", seq) }

// histCursor turns a turn id into the exclusive score bound of a page.
func histCursor(before string) (string, error) {
	if before == "" {
		return "+inf", nil
	}
	if len(before) != 16 {
		return "", fmt.Errorf("redis store: history cursor: %w", store.ErrNotFound)
	}
	n, err := strconv.ParseUint(before, 16, 63)
	if err != nil {
		return "", fmt.Errorf("redis store: history cursor: %w", store.ErrNotFound)
	}
	return "(" + strconv.FormatUint(n, 10), nil
}

func (h *history) Append(ctx context.Context, t store.Turn, keep int, since time.Time) (store.Turn, error) {
	if t.Log == "" {
		return store.Turn{}, errors.New("redis store: history append: empty log")
	}
	if keep <= 0 {
		keep = store.DefaultHistoryTurns
	}
	if t.At.IsZero() {
		t.At = h.s.now()
	}
	stored := t
	stored.ID, stored.Terms = "", nil
	js, err := json.Marshal(stored)
	if err != nil {
		return store.Turn{}, fmt.Errorf("redis store: history append: encode: %w", err)
	}
	k := h.s.keys.histKeys(t.Log)
	keys := k.fixed()
	for _, term := range t.Terms {
		keys = append(keys, k.x+term)
	}
	res, err := scriptHistAppend.Run(ctx, h.s.rdb, keys,
		k.x, js, micros(t.At), keep, micros(since), strings.Join(t.Terms, "\n")).Slice()
	if err != nil {
		return store.Turn{}, wrap("history append", err)
	}
	if len(res) != 2 {
		return store.Turn{}, errors.New("redis store: history append: unexpected reply")
	}
	seq, _ := res[0].(int64)
	if err := h.hint(ctx, t.Log, res[1]); err != nil {
		return store.Turn{}, err
	}
	t.ID = histID(seq)
	return t, nil
}

// hint records a log's oldest turn time (reply ” : none) in hist:oldest.
func (h *history) hint(ctx context.Context, log string, oldest any) error {
	s, _ := oldest.(string)
	var err error
	if s == "" {
		err = h.s.rdb.ZRem(ctx, h.s.keys.histOldest(), log).Err()
	} else {
		score, perr := strconv.ParseFloat(s, 64)
		if perr != nil {
			return fmt.Errorf("redis store: history: unreadable time %q", s)
		}
		err = h.s.rdb.ZAdd(ctx, h.s.keys.histOldest(), goredis.Z{Score: score, Member: log}).Err()
	}
	return wrap("history index", err)
}

func (h *history) decode(log string, seqs []string, vals []any) ([]store.Turn, error) {
	out := make([]store.Turn, 0, len(seqs))
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue // dropped meanwhile
		}
		var t store.Turn
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return nil, fmt.Errorf("redis store: history: decode: %w", err)
		}
		n, err := strconv.ParseInt(seqs[i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redis store: history: bad sequence %q", seqs[i])
		}
		t.ID, t.Log = histID(n), log
		out = append(out, t)
	}
	return out, nil
}

func (h *history) List(ctx context.Context, log string, q store.HistoryQuery) ([]store.Turn, error) {
	max, err := histCursor(q.Before)
	if err != nil {
		return nil, err
	}
	k := h.s.keys.histKeys(log)
	seqs, err := h.s.rdb.ZRevRangeByScore(ctx, k.i, &goredis.ZRangeBy{Min: "-inf", Max: max, Count: int64(q.PageSize())}).Result()
	if err != nil {
		return nil, wrap("history list", err)
	}
	if len(seqs) == 0 {
		return nil, nil
	}
	vals, err := h.s.rdb.HMGet(ctx, k.t, seqs...).Result()
	if err != nil {
		return nil, wrap("history list", err)
	}
	turns, err := h.decode(log, seqs, vals)
	if err != nil {
		return nil, err
	}
	for i, t := range turns {
		if t.At.Before(q.Since) {
			return turns[:i], nil
		}
	}
	return turns, nil
}

func (h *history) Search(ctx context.Context, log string, terms []string, q store.HistoryQuery) ([]store.Turn, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	max, err := histCursor(q.Before)
	if err != nil {
		return nil, err
	}
	k := h.s.keys.histKeys(log)
	keys := []string{k.t, k.a}
	for _, term := range terms {
		keys = append(keys, k.x+term)
	}
	cut := int64(0)
	if !q.Since.IsZero() {
		cut = micros(q.Since)
	}
	res, err := scriptHistSearch.Run(ctx, h.s.rdb, keys, max, cut, q.PageSize()).StringSlice()
	if err != nil {
		return nil, wrap("history search", err)
	}
	seqs := make([]string, 0, len(res)/2)
	vals := make([]any, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		seqs = append(seqs, res[i])
		vals = append(vals, res[i+1])
	}
	return h.decode(log, seqs, vals)
}

// forgetBatch bounds the turns one forget step looks at, so that no
// script holds the server for long.
const forgetBatch = 500

func (h *history) Forget(ctx context.Context, log, principal string) (int, error) {
	k := h.s.keys.histKeys(log)
	// Turns appended after the forget began are not its business.
	top, err := h.s.rdb.Get(ctx, k.seq).Int64()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("history forget", err)
	}
	n := 0
	for low := int64(0); ; {
		res, err := scriptHistForget.Run(ctx, h.s.rdb, k.fixed()[:4], k.x, low, top, principal, forgetBatch).Slice()
		if err != nil {
			return n, wrap("history forget", err)
		}
		if len(res) != 3 {
			return n, errors.New("redis store: history forget: unexpected reply")
		}
		d, _ := res[0].(int64)
		n += int(d)
		last, _ := res[1].(int64)
		if last < 0 {
			return n, h.hint(ctx, log, res[2])
		}
		low = last
	}
}

func (h *history) Prune(ctx context.Context, cutoff time.Time) (time.Time, error) {
	cut := micros(cutoff)
	logs, err := h.s.rdb.ZRangeByScore(ctx, h.s.keys.histOldest(), &goredis.ZRangeBy{
		Min: "-inf", Max: "(" + strconv.FormatInt(cut, 10)}).Result()
	if err != nil {
		return time.Time{}, wrap("history prune", err)
	}
	for _, log := range logs {
		k := h.s.keys.histKeys(log)
		for {
			res, err := scriptHistPrune.Run(ctx, h.s.rdb, k.fixed()[:4], k.x, cut).Text()
			if err != nil {
				return time.Time{}, wrap("history prune", err)
			}
			if res != "" {
				if at, _ := strconv.ParseInt(res, 10, 64); at < cut {
					continue // more than one batch was due
				}
			}
			if err := h.hint(ctx, log, res); err != nil {
				return time.Time{}, err
			}
			break
		}
	}
	z, err := h.s.rdb.ZRangeWithScores(ctx, h.s.keys.histOldest(), 0, 0).Result()
	if err != nil {
		return time.Time{}, wrap("history prune", err)
	}
	if len(z) == 0 {
		return time.Time{}, nil
	}
	return time.UnixMicro(int64(z[0].Score)), nil
}
