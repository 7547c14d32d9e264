package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

type catalog Store

var _ store.Catalog = (*catalog)(nil)

// Catalog records are stored as revision(8) followed by the value.
func decodeRecord(id string, v []byte) (store.Record, error) {
	if len(v) < 8 {
		return store.Record{}, fmt.Errorf("corrupt catalog record %q", id)
	}
	return store.Record{ID: id, Revision: binary.BigEndian.Uint64(v), Value: append([]byte(nil), v[8:]...)}, nil
}

func (c *catalog) Get(ctx context.Context, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	var rec store.Record
	err := (*Store)(c).view(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bktCatalog).Get([]byte(id))
		if v == nil {
			return store.ErrNotFound
		}
		var err error
		rec, err = decodeRecord(id, v)
		return err
	})
	if err != nil {
		return store.Record{}, fmt.Errorf("bolt: catalog get %q: %w", id, err)
	}
	return rec, nil
}

func (c *catalog) List(ctx context.Context) ([]store.Record, error) {
	return c.Page(ctx, "", math.MaxInt)
}

// Page returns at most limit records with ids after after, in id order:
// a page costs its records, not the catalog.
func (c *catalog) Page(ctx context.Context, after string, limit int) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Record
	err := (*Store)(c).view(func(tx *bbolt.Tx) error {
		cur := tx.Bucket(bktCatalog).Cursor()
		k, v := cur.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, v = cur.Next()
		}
		for ; k != nil && len(out) < limit; k, v = cur.Next() {
			rec, err := decodeRecord(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: catalog page: %w", err)
	}
	return out, nil
}

// revision returns the stored revision of id (0: absent).
func revision(tx *bbolt.Tx, id string) uint64 {
	v := tx.Bucket(bktCatalog).Get([]byte(id))
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func (c *catalog) Put(ctx context.Context, f store.Fence, id string, expect uint64, value []byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s := (*Store)(c)
	err := s.update(func(tx *bbolt.Tx) error {
		if err := checkTaskFence(tx, f, id); err != nil {
			return err
		}
		if got := revision(tx, id); got != expect {
			return fmt.Errorf("stored revision %d, expected %d: %w", got, expect, store.ErrConflict)
		}
		v := make([]byte, 8+len(value))
		binary.BigEndian.PutUint64(v, expect+1)
		copy(v[8:], value)
		return tx.Bucket(bktCatalog).Put([]byte(id), v)
	})
	if err != nil {
		return 0, fmt.Errorf("bolt: catalog put %q: %w", id, err)
	}
	return expect + 1, nil
}

// PutAll writes puts in one transaction, one disk sync for all, each
// under Put's checks. A put whose stored revision differs is left out:
// its revision in the result is 0. A stale fence refuses them all.
func (c *catalog) PutAll(ctx context.Context, f store.Fence, puts []store.CatalogPut) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, p := range puts {
		if err := store.CheckShard(f, p.ID); err != nil { // one shard's fence covers its own tasks only (I5)
			return nil, fmt.Errorf("bolt: catalog put: %w", err)
		}
	}
	revs := make([]uint64, len(puts))
	err := (*Store)(c).update(func(tx *bbolt.Tx) error {
		clear(revs)
		if err := checkFence(tx, f); err != nil {
			return err
		}
		b := tx.Bucket(bktCatalog)
		for i, p := range puts {
			if revision(tx, p.ID) != p.Expect {
				continue
			}
			v := make([]byte, 8+len(p.Value))
			binary.BigEndian.PutUint64(v, p.Expect+1)
			copy(v[8:], p.Value)
			if err := b.Put([]byte(p.ID), v); err != nil {
				return err
			}
			revs[i] = p.Expect + 1
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: catalog put %d records: %w", len(puts), err)
	}
	return revs, nil
}

func (c *catalog) Delete(ctx context.Context, f store.Fence, id string, expect uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := (*Store)(c)
	err := s.update(func(tx *bbolt.Tx) error {
		if err := checkTaskFence(tx, f, id); err != nil {
			return err
		}
		got := revision(tx, id)
		if got == 0 {
			return store.ErrNotFound
		}
		if got != expect {
			return fmt.Errorf("stored revision %d, expected %d: %w", got, expect, store.ErrConflict)
		}
		if err := tx.Bucket(bktCatalog).Delete([]byte(id)); err != nil {
			return err
		}
		return tx.Bucket(bktSnapshots).Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("bolt: catalog delete %q: %w", id, err)
	}
	return nil
}

type snapshots Store

var _ store.Snapshots = (*snapshots)(nil)

func (sn *snapshots) Get(ctx context.Context, taskID string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := (*Store)(sn).view(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bktSnapshots).Get([]byte(taskID))
		if v == nil {
			return store.ErrNotFound
		}
		out = append([]byte{}, v...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: snapshot get %q: %w", taskID, err)
	}
	return out, nil
}

// ---------------------------------------------------------------- leases

type leaseRecord struct {
	Holder  string    `json:"holder"`
	Epoch   uint64    `json:"epoch"`
	Expires time.Time `json:"expires"`
}

func getLease(tx *bbolt.Tx, name string) (leaseRecord, bool, error) {
	v := tx.Bucket(bktLeases).Get([]byte(name))
	if v == nil {
		return leaseRecord{}, false, nil
	}
	var r leaseRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return leaseRecord{}, false, fmt.Errorf("corrupt lease %q: %w", name, err)
	}
	return r, true, nil
}

func putLease(tx *bbolt.Tx, name string, r leaseRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.Bucket(bktLeases).Put([]byte(name), v)
}

// checkFence refuses a fenced write unless the named lease is held with
// the fence's epoch. Expiry alone does not stale a fence: any takeover
// raises the epoch, and that is what the check sees.
func checkFence(tx *bbolt.Tx, f store.Fence) error {
	if f.IsZero() {
		return nil
	}
	r, ok, err := getLease(tx, f.Lease)
	if err != nil {
		return err
	}
	if !ok || r.Holder == "" || r.Epoch != f.Epoch {
		return fmt.Errorf("lease %q epoch %d: %w", f.Lease, f.Epoch, store.ErrStaleEpoch)
	}
	return nil
}

// checkTaskFence is checkFence for a write to one task: a scheduling
// fence must also be the lease of the task's shard (I5).
func checkTaskFence(tx *bbolt.Tx, f store.Fence, taskID string) error {
	if err := store.CheckShard(f, taskID); err != nil {
		return err
	}
	return checkFence(tx, f)
}

type leases Store

var _ store.Leases = (*leases)(nil)

func (l *leases) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	if holder == "" || ttl <= 0 {
		return store.Lease{}, fmt.Errorf("bolt: lease acquire %q: empty holder or non-positive ttl", name)
	}
	s := (*Store)(l)
	var out leaseRecord
	err := s.update(func(tx *bbolt.Tx) error {
		now := s.now()
		r, ok, err := getLease(tx, name)
		if err != nil {
			return err
		}
		if ok && r.Holder != "" && now.Before(r.Expires) {
			if r.Holder != holder {
				return store.ErrLeaseHeld
			}
			r.Expires = now.Add(ttl)
			out = r
			return putLease(tx, name, r)
		}
		epochs := tx.Bucket(bktLeaseEpochs)
		var last uint64
		if v := epochs.Get([]byte(name)); len(v) == 8 {
			last = binary.BigEndian.Uint64(v)
		}
		out = leaseRecord{Holder: holder, Epoch: max(last, r.Epoch) + 1, Expires: now.Add(ttl)}
		if err := epochs.Put([]byte(name), u64(out.Epoch)); err != nil {
			return err
		}
		return putLease(tx, name, out)
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("bolt: lease acquire %q: %w", name, err)
	}
	return store.Lease{Name: name, Holder: out.Holder, Epoch: out.Epoch, Expires: out.Expires}, nil
}

func (l *leases) Renew(ctx context.Context, cur store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	s := (*Store)(l)
	var out leaseRecord
	err := s.update(func(tx *bbolt.Tx) error {
		now := s.now()
		r, ok, err := getLease(tx, cur.Name)
		if err != nil {
			return err
		}
		if !ok || r.Holder == "" || r.Holder != cur.Holder || r.Epoch != cur.Epoch || !now.Before(r.Expires) {
			return store.ErrLeaseLost
		}
		r.Expires = now.Add(ttl)
		out = r
		return putLease(tx, cur.Name, r)
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("bolt: lease renew %q: %w", cur.Name, err)
	}
	return store.Lease{Name: cur.Name, Holder: out.Holder, Epoch: out.Epoch, Expires: out.Expires}, nil
}

func (l *leases) Release(ctx context.Context, cur store.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := (*Store)(l)
	err := s.update(func(tx *bbolt.Tx) error {
		r, ok, err := getLease(tx, cur.Name)
		if err != nil {
			return err
		}
		if !ok || r.Holder != cur.Holder || r.Epoch != cur.Epoch {
			return nil // no longer ours: nothing to give up
		}
		r.Holder = ""
		r.Expires = s.now()
		return putLease(tx, cur.Name, r)
	})
	if err != nil {
		return fmt.Errorf("bolt: lease release %q: %w", cur.Name, err)
	}
	return nil
}

func (l *leases) Current(ctx context.Context, name string) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	var r leaseRecord
	err := (*Store)(l).view(func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		r, ok, err = getLease(tx, name)
		if err == nil && !ok {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("bolt: lease current %q: %w", name, err)
	}
	return store.Lease{Name: name, Holder: r.Holder, Epoch: r.Epoch, Expires: r.Expires}, nil
}
