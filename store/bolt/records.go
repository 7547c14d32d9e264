package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// checkCopy checks a whole store file the way restore wants before it
// switches to it: its structure (checkFile), bbolt's own consistency
// check, and every record the store decodes when it serves, read with
// the store's decoders. It writes nothing. A file written by a newer
// binary fails with store.ErrNewerSchema; one that does not hold
// together fails with a DamagedError.
func checkCopy(path string) error {
	if err := checkFile(path, time.Second); err != nil {
		return err
	}
	db, err := openGuarded(path, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return guarded(path, func() error {
		return db.View(func(tx *bbolt.Tx) error {
			var first error
			for err := range tx.Check() { // drained whole: the check's goroutine ends before the transaction
				if first == nil {
					first = err
				}
			}
			if first != nil {
				return &DamagedError{Path: path, Kind: DamageCorrupt, Detail: "consistency check: " + first.Error()}
			}
			if err := checkRecords(tx); err != nil {
				var d *DamagedError
				if errors.As(err, &d) || errors.Is(err, store.ErrNewerSchema) {
					return err
				}
				return &DamagedError{Path: path, Kind: DamageCorrupt, Detail: err.Error()}
			}
			return nil
		})
	})
}

// checkRecords decodes every record whose layout the store defines.
// Opaque values (snapshots, runs, dialog and channel state) are the
// callers' own and are left to them.
func checkRecords(tx *bbolt.Tx) error {
	meta := tx.Bucket(bktMeta)
	if meta == nil {
		return errors.New("no meta bucket")
	}
	v := meta.Get(keySchema)
	if len(v) != 8 {
		return fmt.Errorf("schema record of %d bytes", len(v))
	}
	if schema := binary.BigEndian.Uint64(v); schema > SchemaVersion {
		return fmt.Errorf("file schema %d, binary schema %d: %w", schema, SchemaVersion, store.ErrNewerSchema)
	} else if schema < 2 {
		return nil // older layouts are read, and checked, by their migration
	}
	checks := []struct {
		bucket []byte
		check  func(tx *bbolt.Tx, b *bbolt.Bucket) error
	}{
		{bktCatalog, checkCatalog},
		{bktFxBody, checkBodies},
		{bktFxState, checkStates},
		{bktFxClaim, checkClaims},
		{bktLeases, checkLeases},
		{bktLeaseEpochs, eachLen(8, "lease epoch")},
		{bktDedup, eachMin(8, "dedup mark")},
		{bktDialogs, eachMin(8, "dialog entry")},
		{bktChannels, eachMin(8, "channel entry")},
		{bktBuckets, eachLen(8, "rate bucket")},
		{bktInbox, checkInboxes},
		{bktHistory, checkHistory},
	}
	for _, c := range checks {
		b := tx.Bucket(c.bucket)
		if b == nil {
			continue // created on first use
		}
		if err := c.check(tx, b); err != nil {
			return fmt.Errorf("bucket %s: %w", c.bucket, err)
		}
	}
	return nil
}

func checkCatalog(_ *bbolt.Tx, b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		_, err := decodeRecord(string(k), v)
		return err
	})
}

func checkBodies(_ *bbolt.Tx, b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: body key of %d bytes", errCorruptEffect, len(k))
		}
		_, _, err := decodeBody(v)
		return err
	})
}

func checkStates(_ *bbolt.Tx, b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: state key of %d bytes", errCorruptEffect, len(k))
		}
		_, err := decodeState(v)
		return err
	})
}

// checkClaims checks every claimed key leads to a body and a state.
func checkClaims(tx *bbolt.Tx, b *bbolt.Bucket) error {
	bodies, states := tx.Bucket(bktFxBody), tx.Bucket(bktFxState)
	if bodies == nil || states == nil {
		return fmt.Errorf("%w: effect buckets missing", errCorruptEffect)
	}
	return b.ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: claim index entry of %d bytes", errCorruptEffect, len(v))
		}
		if bodies.Get(v) == nil || states.Get(v) == nil {
			return fmt.Errorf("%w: claim of sequence %d without its body or state", errCorruptEffect, binary.BigEndian.Uint64(v))
		}
		return nil
	})
}

func checkLeases(_ *bbolt.Tx, b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		var r leaseRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("corrupt lease %q: %w", k, err)
		}
		return nil
	})
}

func eachLen(n int, what string) func(*bbolt.Tx, *bbolt.Bucket) error {
	return func(_ *bbolt.Tx, b *bbolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v != nil && len(v) != n {
				return fmt.Errorf("%s %q of %d bytes", what, k, len(v))
			}
			return nil
		})
	}
}

func eachMin(n int, what string) func(*bbolt.Tx, *bbolt.Bucket) error {
	return func(_ *bbolt.Tx, b *bbolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v != nil && len(v) < n {
				return fmt.Errorf("%s %q of %d bytes", what, k, len(v))
			}
			return nil
		})
	}
}

// checkInboxes reads each principal's items as JSON and its counters.
func checkInboxes(_ *bbolt.Tx, root *bbolt.Bucket) error {
	return root.ForEachBucket(func(principal []byte) error {
		b := root.Bucket(principal)
		for _, k := range [][]byte{keyCount, keyUnread} {
			if v := b.Get(k); v != nil && len(v) != 8 {
				return fmt.Errorf("inbox counter %s of %d bytes", k, len(v))
			}
		}
		items := b.Bucket(bktItems)
		if items == nil {
			return nil
		}
		return items.ForEach(func(k, v []byte) error {
			if !json.Valid(v) {
				return fmt.Errorf("corrupt inbox item %q", k)
			}
			return nil
		})
	})
}

// checkHistory reads each log's turns and its index blocks.
func checkHistory(_ *bbolt.Tx, root *bbolt.Bucket) error {
	return root.ForEachBucket(func(log []byte) error {
		lb := root.Bucket(log)
		if turns := lb.Bucket(bktTurns); turns != nil {
			err := turns.ForEach(func(k, v []byte) error {
				var t store.Turn
				if err := json.Unmarshal(v, &t); err != nil {
					return fmt.Errorf("corrupt history turn: %w", err)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		terms := lb.Bucket(bktTerms)
		if terms == nil {
			return nil
		}
		return terms.ForEach(func(k, v []byte) error {
			if len(k) < 9 {
				return errCorruptPostings
			}
			_, err := decodeBlock(binary.BigEndian.Uint64(k[len(k)-8:]), v)
			return err
		})
	})
}
