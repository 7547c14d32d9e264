package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// Item ids are the per-principal sequence, zero-padded so that they sort.
const inboxIDWidth = 16

func inboxSeq(id string) (int64, bool) {
	if len(id) != inboxIDWidth {
		return 0, false
	}
	for i := range len(id) {
		if id[i] < '0' || id[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil && n > 0
}

func (in *inbox) Append(ctx context.Context, item store.InboxItem, limit int) (store.InboxAppend, error) {
	if item.Principal == "" {
		return store.InboxAppend{}, errors.New("redis store: inbox append: empty principal")
	}
	if limit <= 0 {
		limit = store.InboxCap
	}
	if item.CreatedAt.IsZero() {
		item.CreatedAt = in.s.now()
	}
	stored := item
	stored.ID, stored.Read = "", false
	js, err := json.Marshal(stored)
	if err != nil {
		return store.InboxAppend{}, fmt.Errorf("redis store: inbox append: encode: %w", err)
	}
	k := in.s.keys.inboxKeys(item.Principal)
	read := "0"
	if item.Read {
		read = "1"
	}
	res, err := scriptInboxAppend.Run(ctx, in.s.rdb,
		[]string{k.items, k.all, k.unread, k.read, k.keys, k.seq},
		js, item.EffectKey, read, limit).Slice()
	if err != nil {
		return store.InboxAppend{}, wrap("inbox append", err)
	}
	if len(res) < 3 {
		return store.InboxAppend{}, fmt.Errorf("redis store: inbox append: unexpected reply")
	}
	id, _ := res[1].(string)
	if n, _ := res[0].(int64); n == 1 && len(res) == 4 {
		item.ID = id
		dr, _ := res[2].(int64)
		du, _ := res[3].(int64)
		return store.InboxAppend{Item: item, DroppedRead: int(dr), DroppedUnread: int(du)}, nil
	}
	// Already stored under this effect key: return the stored item.
	raw, _ := res[2].(string)
	if err := json.Unmarshal([]byte(raw), &item); err != nil {
		return store.InboxAppend{}, fmt.Errorf("redis store: inbox append: decode: %w", err)
	}
	item.ID = id
	err = in.s.rdb.ZScore(ctx, k.unread, id).Err()
	switch {
	case errors.Is(err, goredis.Nil):
		item.Read = true
	case err != nil:
		return store.InboxAppend{}, wrap("inbox append", err)
	default:
		item.Read = false
	}
	return store.InboxAppend{Item: item}, nil
}

func (in *inbox) List(ctx context.Context, principal string, q store.InboxQuery) ([]store.InboxItem, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	k := in.s.keys.inboxKeys(principal)
	src := k.all
	if q.UnreadOnly {
		src = k.unread
	}
	maxScore := "+inf"
	if q.Before != "" {
		n, ok := inboxSeq(q.Before)
		if !ok {
			return nil, fmt.Errorf("redis store: inbox list: cursor: %w", store.ErrNotFound)
		}
		maxScore = "(" + strconv.FormatInt(n, 10)
	}
	ids, err := in.s.rdb.ZRevRangeByScore(ctx, src, &goredis.ZRangeBy{
		Min: "-inf", Max: maxScore, Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("inbox list", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var vals *goredis.SliceCmd
	var unread *goredis.FloatSliceCmd
	_, err = in.s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		vals = p.HMGet(ctx, k.items, ids...)
		unread = p.ZMScore(ctx, k.unread, ids...)
		return nil
	})
	if err != nil {
		return nil, wrap("inbox list", err)
	}
	// ZMSCORE answers nil for a missing member; go-redis reads it as 0, and
	// no real sequence is 0.
	scores := unread.Val()
	out := make([]store.InboxItem, 0, len(ids))
	for i, v := range vals.Val() {
		raw, ok := v.(string)
		if !ok {
			continue // dropped by the cap meanwhile
		}
		var it store.InboxItem
		if err := json.Unmarshal([]byte(raw), &it); err != nil {
			return nil, fmt.Errorf("redis store: inbox list: decode: %w", err)
		}
		it.ID = ids[i]
		it.Read = i >= len(scores) || scores[i] == 0
		if q.UnreadOnly && it.Read {
			continue
		}
		out = append(out, it)
	}
	return out, nil
}

func (in *inbox) MarkRead(ctx context.Context, principal, id string) (int, error) {
	if id == "all" {
		id = ""
	}
	k := in.s.keys.inboxKeys(principal)
	n, err := scriptInboxMarkRead.Run(ctx, in.s.rdb, []string{k.all, k.unread, k.read}, id).Int64()
	if err != nil {
		return 0, wrap("inbox mark read", err)
	}
	if n < 0 {
		return 0, fmt.Errorf("redis store: inbox item: %w", store.ErrNotFound)
	}
	return int(n), nil
}

func (in *inbox) Unread(ctx context.Context, principal string) (int, error) {
	n, err := in.s.rdb.ZCard(ctx, in.s.keys.inboxKeys(principal).unread).Result()
	if err != nil {
		return 0, wrap("inbox unread", err)
	}
	return int(n), nil
}
