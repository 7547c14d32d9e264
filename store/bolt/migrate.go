package bolt

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// v1Effect is an effect record as schema 1 stored it, whole, under its key.
type v1Effect struct {
	store.Effect
	Seq uint64 `json:"seq"`
}

// migrateSplitEffects rewrites every schema-1 effect into the schema-2
// layout (claim index, body, state, task index, queue, in-flight) and
// drops the schema-1 buckets. It runs in the one migration transaction, so
// a crash leaves the file on schema 1.
func migrateSplitEffects(tx *bbolt.Tx) error {
	for _, name := range [][]byte{bktFxClaim, bktFxBody, bktFxState, bktFxQueue, bktFxTask, bktFxFlight} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	old := tx.Bucket(bktEffects)
	if old == nil {
		return fmt.Errorf("schema 1 bucket %s missing", bktEffects)
	}
	err := old.ForEach(func(k, v []byte) error {
		var r v1Effect
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("%w: schema 1 effect: %w", errCorruptEffect, err)
		}
		if r.Seq == 0 || r.Key != string(k) {
			return fmt.Errorf("%w: schema 1 effect without sequence or with a foreign key", errCorruptEffect)
		}
		e, err := encodeEffect(r.Effect)
		if err != nil {
			return err
		}
		return insert(tx, r.Seq, e)
	})
	if err != nil {
		return err
	}
	if err := tx.Bucket(bktFxBody).SetSequence(old.Sequence()); err != nil {
		return err
	}
	for _, name := range [][]byte{bktEffects, bktQueue, bktByTask, bktInFlight} {
		if err := tx.DeleteBucket(name); err != nil {
			return fmt.Errorf("drop schema 1 bucket %s: %w", name, err)
		}
	}
	return nil
}

// inboxID is the id of a principal's seq-th inbox item: decimal, padded
// to sort as it counts, so chat shows it as a short number ("/read 7")
// and the Redis store's ids read the same.
func inboxID(seq uint64) string { return fmt.Sprintf("%016d", seq) }

// migrateInboxDecimalIDs rewrites inbox item ids from hexadecimal to
// decimal (inboxID), in the items bucket, in each item's JSON and in the
// effect-key index, so an inbox keeps its order and its dedup.
func migrateInboxDecimalIDs(tx *bbolt.Tx) error {
	root := tx.Bucket(bktInbox)
	if root == nil {
		return nil
	}
	return root.ForEachBucket(func(principal []byte) error {
		p := root.Bucket(principal)
		items := p.Bucket(bktItems)
		if items == nil {
			return nil
		}
		type rec struct{ oldID, newID, v []byte }
		var recs []rec
		err := items.ForEach(func(k, v []byte) error {
			var seq uint64
			if _, err := fmt.Sscanf(string(k), "%x", &seq); err != nil {
				return fmt.Errorf("inbox item id %q: %w", k, err)
			}
			var it map[string]json.RawMessage
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("inbox item %q: %w", k, err)
			}
			id := inboxID(seq)
			it["id"], _ = json.Marshal(id)
			nv, err := json.Marshal(it)
			if err != nil {
				return err
			}
			recs = append(recs, rec{append([]byte(nil), k...), []byte(id), nv})
			return nil
		})
		if err != nil {
			return err
		}
		renamed := map[string][]byte{}
		for _, r := range recs {
			if err := items.Delete(r.oldID); err != nil {
				return err
			}
			renamed[string(r.oldID)] = r.newID
		}
		for _, r := range recs {
			if err := items.Put(r.newID, r.v); err != nil {
				return err
			}
		}
		keys := p.Bucket(bktKeys)
		if keys == nil {
			return nil
		}
		type ref struct{ key, id []byte }
		var refs []ref
		_ = keys.ForEach(func(k, v []byte) error {
			if id, ok := renamed[string(v)]; ok {
				refs = append(refs, ref{append([]byte(nil), k...), id})
			}
			return nil
		})
		for _, r := range refs {
			if err := keys.Put(r.key, r.id); err != nil {
				return err
			}
		}
		return nil
	})
}
