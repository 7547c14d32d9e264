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
