package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// ---------------------------------------------------------------- dedup

type dedup Store

var _ store.Dedup = (*dedup)(nil)

// Mark stores ns/id with its expiry (ttl <= 0: never expires).
func (d *dedup) Mark(ctx context.Context, ns, id string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s := (*Store)(d)
	key := []byte(ns + "\x00" + id)
	var first bool
	err := s.update(func(tx *bbolt.Tx) error {
		now := s.now()
		b := tx.Bucket(bktDedup)
		if v := b.Get(key); v != nil && !expired(v, nanos(now)) {
			first = false
			return nil
		}
		first = true
		return b.Put(key, withExpiry(now, ttl, nil))
	})
	if err != nil {
		return false, fmt.Errorf("bolt: dedup mark in %q: %w", ns, err)
	}
	return first, nil
}

// ---------------------------------------------------------------- kv

type kv struct {
	s      *Store
	bucket []byte
}

var _ store.KV = (*kv)(nil)

func (k *kv) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := k.s.view(func(tx *bbolt.Tx) error {
		v := tx.Bucket(k.bucket).Get([]byte(key))
		if v == nil || expired(v, nanos(k.s.now())) {
			return store.ErrNotFound
		}
		out = append([]byte{}, v[8:]...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: %s get: %w", k.bucket, err)
	}
	return out, nil
}

func (k *kv) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := k.s.update(func(tx *bbolt.Tx) error {
		return tx.Bucket(k.bucket).Put([]byte(key), withExpiry(k.s.now(), ttl, value))
	})
	if err != nil {
		return fmt.Errorf("bolt: %s put: %w", k.bucket, err)
	}
	return nil
}

func (k *kv) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := k.s.update(func(tx *bbolt.Tx) error {
		return tx.Bucket(k.bucket).Delete([]byte(key))
	})
	if err != nil {
		return fmt.Errorf("bolt: %s delete: %w", k.bucket, err)
	}
	return nil
}

// ---------------------------------------------------------------- runs

// DefaultRunKeep is how many runs Append keeps when asked for keep <= 0
// (README, The promise: I7; history is never unbounded).
const DefaultRunKeep = 30

type runs Store

var _ store.Runs = (*runs)(nil)

func (r *runs) Append(ctx context.Context, taskID string, run []byte, keep int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if keep <= 0 {
		keep = DefaultRunKeep
	}
	err := (*Store)(r).update(func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(bktRuns).CreateBucketIfNotExists([]byte(taskID))
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		if err := b.Put(u64(seq), run); err != nil {
			return err
		}
		var all [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			all = append(all, k)
		}
		old := all[:max(0, len(all)-keep)]
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bolt: runs append %q: %w", taskID, err)
	}
	return nil
}

func (r *runs) List(ctx context.Context, taskID string, limit int) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out [][]byte
	err := (*Store)(r).view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bktRuns).Bucket([]byte(taskID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			out = append(out, append([]byte{}, v...))
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: runs list %q: %w", taskID, err)
	}
	return out, nil
}

// ---------------------------------------------------------------- inbox

// Each principal has a bucket holding "items" (id -> item JSON), "keys"
// (effect key -> id) and the counters "n" and "unread".
var (
	bktItems  = []byte("items")
	bktKeys   = []byte("keys")
	keyCount  = []byte("n")
	keyUnread = []byte("unread")
)

// newestBefore positions c on the last key below before (nil: the last
// key of all), for a walk newest first with c.Prev.
func newestBefore(c *bbolt.Cursor, before []byte) (k, v []byte) {
	if before == nil {
		return c.Last()
	}
	if k, _ = c.Seek(before); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// defaultInboxPage is the page size of an InboxQuery without a Limit.
const defaultInboxPage = 50

type inbox Store

var _ store.Inbox = (*inbox)(nil)

func counter(b *bbolt.Bucket, k []byte) int {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int(int64(binaryU64(v)))
}

func setCounter(b *bbolt.Bucket, k []byte, n int) error { return b.Put(k, u64(uint64(n))) }

func (in *inbox) Append(ctx context.Context, item store.InboxItem, limit int) (store.InboxAppend, error) {
	if err := ctx.Err(); err != nil {
		return store.InboxAppend{}, err
	}
	if item.Principal == "" {
		return store.InboxAppend{}, fmt.Errorf("bolt: inbox append: empty principal")
	}
	if limit <= 0 {
		limit = store.InboxCap
	}
	s := (*Store)(in)
	var out store.InboxItem
	var res store.InboxAppend
	err := s.update(func(tx *bbolt.Tx) error {
		out, res = store.InboxItem{}, store.InboxAppend{}
		p, err := tx.Bucket(bktInbox).CreateBucketIfNotExists([]byte(item.Principal))
		if err != nil {
			return err
		}
		items, err := p.CreateBucketIfNotExists(bktItems)
		if err != nil {
			return err
		}
		keys, err := p.CreateBucketIfNotExists(bktKeys)
		if err != nil {
			return err
		}
		if item.EffectKey != "" {
			if id := keys.Get([]byte(item.EffectKey)); id != nil {
				if v := items.Get(id); v != nil {
					out = store.InboxItem{}
					return json.Unmarshal(v, &out)
				}
			}
		}
		seq, err := items.NextSequence()
		if err != nil {
			return err
		}
		out = item
		out.ID = inboxID(seq)
		if out.CreatedAt.IsZero() {
			out.CreatedAt = s.now()
		}
		v, err := json.Marshal(out)
		if err != nil {
			return err
		}
		if err := items.Put([]byte(out.ID), v); err != nil {
			return err
		}
		if out.EffectKey != "" {
			if err := keys.Put([]byte(out.EffectKey), []byte(out.ID)); err != nil {
				return err
			}
		}
		n, unread := counter(p, keyCount)+1, counter(p, keyUnread)
		if !out.Read {
			unread++
		}
		n, unread, res, err = trimInbox(items, keys, n, unread, limit)
		if err != nil {
			return err
		}
		if err := setCounter(p, keyCount, n); err != nil {
			return err
		}
		return setCounter(p, keyUnread, unread)
	})
	if err != nil {
		return store.InboxAppend{}, fmt.Errorf("bolt: inbox append: %w", err)
	}
	res.Item = out
	return res, nil
}

// trimInbox keeps at most limit items: the oldest read items go first,
// then the oldest unread; res counts what went. The counters say how many
// read items there are, so an inbox holding none (a full inbox nobody
// reads) gives up its oldest items without decoding the rest, and a scan
// stops once it has its victims: a write to a full inbox costs the
// victims, not the inbox.
func trimInbox(items, keys *bbolt.Bucket, n, unread, limit int) (_, _ int, res store.InboxAppend, _ error) {
	need := n - limit
	if need <= 0 {
		return n, unread, res, nil
	}
	wantRead := min(need, n-unread)
	wantUnread := need - wantRead
	type victim struct {
		id     []byte
		effect string
		read   bool
	}
	var read, unreadV []victim
	c := items.Cursor()
	for k, v := c.First(); k != nil && (len(read) < wantRead || len(unreadV) < wantUnread); k, v = c.Next() {
		var it struct {
			EffectKey string `json:"effect_key"`
			Read      bool   `json:"read"`
		}
		if err := json.Unmarshal(v, &it); err != nil {
			return 0, 0, res, fmt.Errorf("corrupt inbox item: %w", err)
		}
		vi := victim{id: append([]byte{}, k...), effect: it.EffectKey, read: it.Read}
		switch {
		case it.Read && len(read) < wantRead:
			read = append(read, vi)
		case !it.Read && len(unreadV) < wantUnread:
			unreadV = append(unreadV, vi)
		}
	}
	for _, vi := range append(read, unreadV...) {
		if err := items.Delete(vi.id); err != nil {
			return 0, 0, res, err
		}
		if vi.effect != "" {
			if err := keys.Delete([]byte(vi.effect)); err != nil {
				return 0, 0, res, err
			}
		}
		n--
		if vi.read {
			res.DroppedRead++
		} else {
			unread--
			res.DroppedUnread++
		}
	}
	return n, unread, res, nil
}

func (in *inbox) List(ctx context.Context, principal string, q store.InboxQuery) ([]store.InboxItem, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultInboxPage
	}
	var out []store.InboxItem
	err := (*Store)(in).view(func(tx *bbolt.Tx) error {
		p := tx.Bucket(bktInbox).Bucket([]byte(principal))
		if p == nil {
			return nil
		}
		var from []byte
		if q.Before != "" {
			from = []byte(q.Before)
		}
		c := p.Bucket(bktItems).Cursor()
		for k, v := newestBefore(c, from); k != nil && len(out) < limit; k, v = c.Prev() {
			var it store.InboxItem
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("corrupt inbox item: %w", err)
			}
			if q.UnreadOnly && it.Read {
				continue
			}
			out = append(out, it)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: inbox list: %w", err)
	}
	return out, nil
}

func (in *inbox) MarkRead(ctx context.Context, principal, id string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	changed := 0
	err := (*Store)(in).update(func(tx *bbolt.Tx) error {
		changed = 0
		p := tx.Bucket(bktInbox).Bucket([]byte(principal))
		if p == nil {
			if id == "" || id == "all" {
				return nil
			}
			return store.ErrNotFound
		}
		items := p.Bucket(bktItems)
		type upd struct{ k, v []byte }
		var todo []upd
		mark := func(k, v []byte) error {
			var it store.InboxItem
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("corrupt inbox item: %w", err)
			}
			if it.Read {
				return nil
			}
			it.Read = true
			nv, err := json.Marshal(it)
			if err != nil {
				return err
			}
			todo = append(todo, upd{append([]byte{}, k...), nv})
			return nil
		}
		if id == "" || id == "all" {
			if err := items.ForEach(mark); err != nil {
				return err
			}
		} else {
			v := items.Get([]byte(id))
			if v == nil {
				return store.ErrNotFound
			}
			if err := mark([]byte(id), v); err != nil {
				return err
			}
		}
		for _, u := range todo {
			if err := items.Put(u.k, u.v); err != nil {
				return err
			}
		}
		changed = len(todo)
		return setCounter(p, keyUnread, max(0, counter(p, keyUnread)-changed))
	})
	if err != nil {
		return 0, fmt.Errorf("bolt: inbox mark read: %w", err)
	}
	return changed, nil
}

func (in *inbox) Unread(ctx context.Context, principal string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err := (*Store)(in).view(func(tx *bbolt.Tx) error {
		if p := tx.Bucket(bktInbox).Bucket([]byte(principal)); p != nil {
			n = counter(p, keyUnread)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("bolt: inbox unread: %w", err)
	}
	return n, nil
}
