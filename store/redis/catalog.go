package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// fenceArgs returns the lease key and the (fenced, epoch) script arguments
// for f. An unfenced call still names a key of the {P} slot so that the
// script's key list stays in one slot.
func (s *Store) fenceArgs(f store.Fence) (key, fenced, epoch string) {
	if f.IsZero() {
		return s.keys.leaseKey(""), "0", "0"
	}
	return s.keys.leaseKey(f.Lease), "1", strconv.FormatUint(f.Epoch, 10)
}

// Script replies for the fenced catalog scripts and the ledger commit.
const (
	replyOK       = 0
	replyStale    = 1
	replyConflict = 2
	replyNotFound = 3
)

func scriptErr(op string, code int64) error {
	switch code {
	case replyStale:
		return fmt.Errorf("redis store: %s: %w", op, store.ErrStaleEpoch)
	case replyConflict:
		return fmt.Errorf("redis store: %s: %w", op, store.ErrConflict)
	case replyNotFound:
		return fmt.Errorf("redis store: %s: %w", op, store.ErrNotFound)
	}
	return fmt.Errorf("redis store: %s: unexpected script reply %d", op, code)
}

func (c *catalog) Get(ctx context.Context, id string) (store.Record, error) {
	vals, err := c.s.rdb.HMGet(ctx, c.s.keys.taskKey(id), "rev", "val").Result()
	if err != nil {
		return store.Record{}, wrap("catalog get", err)
	}
	return decodeRecord(id, vals)
}

func decodeRecord(id string, vals []any) (store.Record, error) {
	rev, ok := vals[0].(string)
	if !ok {
		return store.Record{}, fmt.Errorf("redis store: catalog get: %w", store.ErrNotFound)
	}
	n, err := strconv.ParseUint(rev, 10, 64)
	if err != nil {
		return store.Record{}, fmt.Errorf("redis store: catalog record has revision %q: %w", rev, err)
	}
	val, _ := vals[1].(string)
	return store.Record{ID: id, Revision: n, Value: []byte(val)}, nil
}

func (c *catalog) List(ctx context.Context) ([]store.Record, error) {
	ids, err := c.s.rdb.SMembers(ctx, c.s.keys.taskIDsKey()).Result()
	if err != nil {
		return nil, wrap("catalog list", err)
	}
	slices.Sort(ids)
	return c.records(ctx, ids)
}

// records reads the records of ids in one round trip, leaving out those
// deleted meanwhile.
func (c *catalog) records(ctx context.Context, ids []string) ([]store.Record, error) {
	cmds := make([]*goredis.SliceCmd, len(ids))
	_, err := c.s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, c.s.keys.taskKey(id), "rev", "val")
		}
		return nil
	})
	if err != nil {
		return nil, wrap("catalog list", err)
	}
	out := make([]store.Record, 0, len(ids))
	for i, id := range ids {
		r, err := decodeRecord(id, cmds[i].Val())
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted between the two reads
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Page returns at most limit records with ids after after, in id order.
// It reads every id but only the page's records.
func (c *catalog) Page(ctx context.Context, after string, limit int) ([]store.Record, error) {
	ids, err := c.s.rdb.SMembers(ctx, c.s.keys.taskIDsKey()).Result()
	if err != nil {
		return nil, wrap("catalog page", err)
	}
	slices.Sort(ids)
	i, found := slices.BinarySearch(ids, after)
	if found {
		i++
	}
	ids = ids[i:min(len(ids), i+limit)]
	return c.records(ctx, ids)
}

func (c *catalog) Put(ctx context.Context, f store.Fence, id string, expect uint64, value []byte) (uint64, error) {
	if err := store.CheckShard(f, id); err != nil {
		return 0, fmt.Errorf("redis store: catalog put: %w", err)
	}
	ck, fenced, epoch := c.s.fenceArgs(f)
	if value == nil {
		value = []byte{}
	}
	res, err := scriptCatalogPut.Run(ctx, c.s.rdb,
		[]string{ck, c.s.keys.taskKey(id), c.s.keys.taskIDsKey()},
		fenced, epoch, strconv.FormatUint(expect, 10), value, id).Int64Slice()
	if err != nil {
		return 0, wrap("catalog put", err)
	}
	if res[0] != replyOK {
		return 0, scriptErr("catalog put", res[0])
	}
	return uint64(res[1]), nil
}

func (c *catalog) Delete(ctx context.Context, f store.Fence, id string, expect uint64) error {
	if err := store.CheckShard(f, id); err != nil {
		return fmt.Errorf("redis store: catalog delete: %w", err)
	}
	ck, fenced, epoch := c.s.fenceArgs(f)
	res, err := scriptCatalogDelete.Run(ctx, c.s.rdb,
		[]string{ck, c.s.keys.taskKey(id), c.s.keys.taskIDsKey(), c.s.keys.snapKey(id)},
		fenced, epoch, strconv.FormatUint(expect, 10), id).Int64()
	if err != nil {
		return wrap("catalog delete", err)
	}
	if res != replyOK {
		return scriptErr("catalog delete", res)
	}
	return nil
}

func (sn *snapshots) Get(ctx context.Context, taskID string) ([]byte, error) {
	b, err := sn.s.rdb.Get(ctx, sn.s.keys.snapKey(taskID)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis store: snapshot get: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, wrap("snapshot get", err)
	}
	return b, nil
}
