package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// Effect layout (schema 2). Each effect takes a sequence number when it is
// claimed and is stored in two parts under it: an immutable body written
// once (key, task, recipient, kind, payload, creation) and a small mutable
// state record that Begin, Settle and the other transitions rewrite. New
// effects therefore append at the right edge of the sequence-keyed
// buckets, and a transition dirties only small records in recently
// written pages instead of rewriting the payload at a random place.
var (
	bktFxClaim  = []byte("fx_claim")    // effect key -> seq(8): the claim-once index
	bktFxBody   = []byte("fx_body")     // seq(8) -> immutable body; the bucket's sequence numbers effects
	bktFxState  = []byte("fx_state")    // seq(8) -> mutable state (codec.go)
	bktFxQueue  = []byte("fx_queue")    // notBefore(8) seq(8) -> nil: queued effects only
	bktFxTask   = []byte("fx_task")     // task 0x00 seq(8) -> nil
	bktFxFlight = []byte("fx_inflight") // seq(8) -> worker: effects in flight
)

// Fill factors for buckets whose keys only grow: pages split full instead
// of half empty. State records grow a little (attempts), so leave room.
const (
	fillAppend = 1.0
	fillState  = 0.9
)

var errCorruptEffect = errors.New("corrupt effect record")

// effectBody is the part of an effect that never changes after the claim
// (codec.go has its encoding).
type effectBody struct {
	Key       string
	TaskID    string
	Recipient string
	Kind      string
	CreatedAt time.Time
	RunID     string
}

// effectState is the part of an effect the transitions rewrite, kept in
// its own small record; the transitions themselves are store.Progress's.
type effectState = store.Progress

// fx is one loaded effect: its sequence, body and state.
type fx struct {
	seq     uint64
	body    effectBody
	payload []byte
	st      effectState
}

func (f *fx) effect() store.Effect {
	e := store.Effect{
		Key: f.body.Key, TaskID: f.body.TaskID, Recipient: f.body.Recipient, Kind: f.body.Kind,
		Payload: f.payload, CreatedAt: f.body.CreatedAt, RunID: f.body.RunID,
	}
	e.SetProgress(f.st)
	return e
}

func splitEffect(e store.Effect, seq uint64) fx {
	return fx{
		seq: seq,
		body: effectBody{Key: e.Key, TaskID: e.TaskID, Recipient: e.Recipient, Kind: e.Kind,
			CreatedAt: e.CreatedAt, RunID: e.RunID},
		payload: e.Payload,
		st:      e.Progress(),
	}
}

func seqKey(seq uint64) []byte { return u64(seq) }

func queueKey(notBefore time.Time, seq uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, nanos(notBefore))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

func taskKey(task string, seq uint64) []byte {
	k := make([]byte, 0, len(task)+9)
	k = append(k, task...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// lookup returns the sequence of a claimed key.
func lookup(tx *bbolt.Tx, key string) (uint64, error) {
	v := tx.Bucket(bktFxClaim).Get([]byte(key))
	if v == nil {
		return 0, store.ErrNotFound
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: claim index entry of %d bytes", errCorruptEffect, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func getState(tx *bbolt.Tx, seq uint64) (effectState, error) {
	v := tx.Bucket(bktFxState).Get(seqKey(seq))
	if v == nil {
		return effectState{}, fmt.Errorf("%w: no state for sequence %d", errCorruptEffect, seq)
	}
	return decodeState(v)
}

func putState(tx *bbolt.Tx, seq uint64, st effectState) error {
	b := tx.Bucket(bktFxState)
	b.FillPercent = fillState
	return b.Put(seqKey(seq), encodeState(st))
}

// load reads the effect with sequence seq.
func load(tx *bbolt.Tx, seq uint64) (fx, error) {
	f := fx{seq: seq}
	v := tx.Bucket(bktFxBody).Get(seqKey(seq))
	if v == nil {
		return f, fmt.Errorf("%w: no body for sequence %d", errCorruptEffect, seq)
	}
	var err error
	if f.body, f.payload, err = decodeBody(v); err != nil {
		return f, err
	}
	f.st, err = getState(tx, seq)
	return f, err
}

// loadKey reads the effect claimed under key.
func loadKey(tx *bbolt.Tx, key string) (fx, error) {
	seq, err := lookup(tx, key)
	if err != nil {
		return fx{}, err
	}
	return load(tx, seq)
}

// encoded is a claimed effect prepared for insert: the body and state
// are encoded before the write transaction, so the committer only copies
// bytes into pages.
type encoded struct {
	key, task string
	body      []byte
	state     []byte
	st        effectState // for the queue or in-flight entry
}

func encodeEffect(e store.Effect) (encoded, error) {
	f := splitEffect(e, 0)
	body, err := encodeBody(f.body, f.payload)
	if err != nil {
		return encoded{}, err
	}
	return encoded{key: e.Key, task: e.TaskID, body: body, state: encodeState(f.st), st: f.st}, nil
}

// insert writes a newly claimed effect under seq: claim index, body,
// state, task index, and the queue or in-flight entry its state calls for.
func insert(tx *bbolt.Tx, seq uint64, e encoded) error {
	k := seqKey(seq)
	if err := tx.Bucket(bktFxClaim).Put([]byte(e.key), k); err != nil {
		return err
	}
	body := tx.Bucket(bktFxBody)
	body.FillPercent = fillAppend
	if err := body.Put(k, e.body); err != nil {
		return err
	}
	states := tx.Bucket(bktFxState)
	states.FillPercent = fillState
	if err := states.Put(k, e.state); err != nil {
		return err
	}
	if err := tx.Bucket(bktFxTask).Put(taskKey(e.task, seq), nil); err != nil {
		return err
	}
	return reindex(tx, seq, nil, e.st)
}

// put stores e whatever the file holds of it: a new claim is inserted, a
// claimed effect gets e's state and the index entries it calls for. It
// is how logged effects reach the file (checkpoint and replay).
func put(tx *bbolt.Tx, e encoded) error {
	seq, err := lookup(tx, e.key)
	if errors.Is(err, store.ErrNotFound) {
		if e.body == nil {
			return fmt.Errorf("%w: logged state of %q before its claim", errCorruptEffect, e.key)
		}
		if seq, err = tx.Bucket(bktFxBody).NextSequence(); err != nil {
			return err
		}
		return insert(tx, seq, e)
	}
	if err != nil {
		return err
	}
	old, err := getState(tx, seq)
	if err != nil {
		return err
	}
	if err := reindex(tx, seq, &old, e.st); err != nil {
		return err
	}
	states := tx.Bucket(bktFxState)
	states.FillPercent = fillState
	return states.Put(seqKey(seq), e.state)
}

// reindex moves an effect's queue and in-flight entries from what state
// old called for (nil: none yet) to what st calls for.
func reindex(tx *bbolt.Tx, seq uint64, old *effectState, st effectState) error {
	if old != nil && old.Queued() && !(st.Queued() && st.NotBefore.Equal(old.NotBefore)) {
		if err := dequeue(tx, seq, old.NotBefore); err != nil {
			return err
		}
	}
	if old != nil && old.Flying() && !st.Flying() {
		if err := tx.Bucket(bktFxFlight).Delete(seqKey(seq)); err != nil {
			return err
		}
	}
	switch {
	case st.Flying() && (old == nil || !old.Flying() || old.Worker != st.Worker):
		fl := tx.Bucket(bktFxFlight)
		fl.FillPercent = fillState
		return fl.Put(seqKey(seq), []byte(st.Worker))
	case st.Queued() && (old == nil || !old.Queued() || !st.NotBefore.Equal(old.NotBefore)):
		return enqueue(tx, seq, st.NotBefore)
	}
	return nil
}

func enqueue(tx *bbolt.Tx, seq uint64, notBefore time.Time) error {
	q := tx.Bucket(bktFxQueue)
	q.FillPercent = fillState
	return q.Put(queueKey(notBefore, seq), nil)
}

func dequeue(tx *bbolt.Tx, seq uint64, notBefore time.Time) error {
	return tx.Bucket(bktFxQueue).Delete(queueKey(notBefore, seq))
}
