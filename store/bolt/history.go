package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// History layout. The buckets are created by the first append, so a file
// without history needs no migration and an older binary ignores them.
//
//	history/<log>/t          seq(8) -> turn JSON (with its terms)
//	history/<log>/x          term 0x00 first(8) -> block: the inverted index (postings.go)
//	history/<log> "o"        the log's key in history_oldest
//	history/<log> "n"        how many turns the log holds
//	history_oldest           at(8) log -> nil: each log's oldest turn
var (
	bktHistory       = []byte("history")
	bktHistoryOldest = []byte("history_oldest")
	bktTurns         = []byte("t")
	bktTerms         = []byte("x")
	keyOldest        = []byte("o")
	keyTurnCount     = []byte("n")
)

type history Store

var _ store.History = (*history)(nil)

// History returns the conversation history.
func (s *Store) History() store.History { return (*history)(s) }

func turnID(seq uint64) string { return fmt.Sprintf("%016x", seq) }

// turnSeq reads a turn id; ok is false for anything else.
func turnSeq(id string) (uint64, bool) {
	if len(id) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(id, 16, 64)
	return n, err == nil
}

// posting is one index entry: a term and a turn's sequence.
type posting struct {
	term string
	seq  uint64
}

func (h *history) Append(ctx context.Context, t store.Turn, keep int, since time.Time) (store.Turn, error) {
	if err := ctx.Err(); err != nil {
		return store.Turn{}, err
	}
	if t.Log == "" {
		return store.Turn{}, fmt.Errorf("bolt: history append: empty log")
	}
	if keep <= 0 {
		keep = store.DefaultHistoryTurns
	}
	s := (*Store)(h)
	if t.At.IsZero() {
		t.At = s.now()
	}
	var out store.Turn
	err := s.update(func(tx *bbolt.Tx) error {
		lb, turns, terms, err := createLog(tx, t.Log)
		if err != nil {
			return err
		}
		seq, err := turns.NextSequence()
		if err != nil {
			return err
		}
		out = t
		out.ID = turnID(seq)
		v, err := json.Marshal(out)
		if err != nil {
			return err
		}
		if err := turns.Put(u64(seq), v); err != nil {
			return err
		}
		for _, term := range out.Terms {
			if err := postAdd(terms, term, seq); err != nil {
				return err
			}
		}
		if err := setCounter(lb, keyTurnCount, counter(lb, keyTurnCount)+1); err != nil {
			return err
		}
		if err := trimLog(lb, turns, terms, keep, nanos(since)); err != nil {
			return err
		}
		return setOldest(tx, lb, t.Log, turns)
	})
	if err != nil {
		return store.Turn{}, fmt.Errorf("bolt: history append: %w", err)
	}
	return out, nil
}

func createLog(tx *bbolt.Tx, log string) (lb, turns, terms *bbolt.Bucket, err error) {
	root, err := tx.CreateBucketIfNotExists(bktHistory)
	if err != nil {
		return nil, nil, nil, err
	}
	if lb, err = root.CreateBucketIfNotExists([]byte(log)); err != nil {
		return nil, nil, nil, err
	}
	if turns, err = lb.CreateBucketIfNotExists(bktTurns); err != nil {
		return nil, nil, nil, err
	}
	turns.FillPercent = 0.95 // keys only grow
	if terms, err = lb.CreateBucketIfNotExists(bktTerms); err != nil {
		return nil, nil, nil, err
	}
	return lb, turns, terms, nil
}

// trimLog drops turns older than since (nanoseconds; 0 keeps all) and
// all but the newest keep, oldest first, with their index entries.
func trimLog(lb, turns, terms *bbolt.Bucket, keep int, since uint64) error {
	n := counter(lb, keyTurnCount)
	c := turns.Cursor()
	var dead doomed
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var t store.Turn
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("corrupt history turn: %w", err)
		}
		if n-len(dead.keys) <= keep && (since == 0 || nanos(t.At) >= since) {
			break
		}
		dead.add(k, t)
	}
	if len(dead.keys) == 0 {
		return nil
	}
	if err := dead.drop(turns, terms); err != nil {
		return err
	}
	return setCounter(lb, keyTurnCount, max(0, n-len(dead.keys)))
}

// doomed collects turns to drop, with their index entries, while a cursor
// walks the turns; drop deletes them once the walk is done.
type doomed struct {
	keys     [][]byte
	postings []posting
}

func (d *doomed) add(k []byte, t store.Turn) {
	d.keys = append(d.keys, append([]byte{}, k...))
	for _, term := range t.Terms {
		d.postings = append(d.postings, posting{term, binaryU64(k)})
	}
}

func (d *doomed) drop(turns, terms *bbolt.Bucket) error {
	for _, p := range d.postings {
		if err := postRemove(terms, p.term, p.seq); err != nil {
			return err
		}
	}
	for _, k := range d.keys {
		if err := turns.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// setOldest records the log's oldest turn in history_oldest (or removes
// the log from it when it has none).
func setOldest(tx *bbolt.Tx, lb *bbolt.Bucket, log string, turns *bbolt.Bucket) error {
	idx, err := tx.CreateBucketIfNotExists(bktHistoryOldest)
	if err != nil {
		return err
	}
	var want []byte
	if _, v := turns.Cursor().First(); v != nil {
		var t store.Turn
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("corrupt history turn: %w", err)
		}
		want = append(u64(nanos(t.At)), log...)
	}
	old := lb.Get(keyOldest)
	if bytes.Equal(old, want) {
		return nil
	}
	if old != nil {
		if err := idx.Delete(old); err != nil {
			return err
		}
	}
	if want == nil {
		return lb.Delete(keyOldest)
	}
	if err := idx.Put(want, nil); err != nil {
		return err
	}
	return lb.Put(keyOldest, want)
}

func logBuckets(tx *bbolt.Tx, log string) (turns, terms *bbolt.Bucket) {
	root := tx.Bucket(bktHistory)
	if root == nil {
		return nil, nil
	}
	lb := root.Bucket([]byte(log))
	if lb == nil {
		return nil, nil
	}
	return lb.Bucket(bktTurns), lb.Bucket(bktTerms)
}

// bound is the exclusive upper turn sequence of q (0: none).
func bound(q store.HistoryQuery) (uint64, error) {
	if q.Before == "" {
		return 0, nil
	}
	seq, ok := turnSeq(q.Before)
	if !ok {
		return 0, fmt.Errorf("cursor %q: %w", q.Before, store.ErrNotFound)
	}
	return seq, nil
}

func (h *history) List(ctx context.Context, log string, q store.HistoryQuery) ([]store.Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := q.PageSize()
	var out []store.Turn
	err := (*Store)(h).view(func(tx *bbolt.Tx) error {
		before, err := bound(q)
		if err != nil {
			return err
		}
		turns, _ := logBuckets(tx, log)
		if turns == nil {
			return nil
		}
		var from []byte
		if before != 0 {
			from = u64(before)
		}
		c := turns.Cursor()
		for k, v := newestBefore(c, from); k != nil && len(out) < limit; k, v = c.Prev() {
			var t store.Turn
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("corrupt history turn: %w", err)
			}
			if t.At.Before(q.Since) {
				break // older turns are older still
			}
			t.Terms = nil
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: history list: %w", err)
	}
	return out, nil
}

func (h *history) Search(ctx context.Context, log string, terms []string, q store.HistoryQuery) ([]store.Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := q.PageSize()
	var out []store.Turn
	err := (*Store)(h).view(func(tx *bbolt.Tx) error {
		out = nil
		before, err := bound(q)
		if err != nil {
			return err
		}
		turns, idx := logBuckets(tx, log)
		if turns == nil || len(terms) == 0 {
			return nil
		}
		hi := before - 1 // the newest sequence still wanted
		if before == 0 {
			hi = ^uint64(0)
		}
		j := newJoin(idx, terms)
		for len(out) < limit {
			seq, ok, err := j.next(hi)
			if err != nil || !ok {
				return err
			}
			if v := turns.Get(u64(seq)); v != nil {
				var t store.Turn
				if err := json.Unmarshal(v, &t); err != nil {
					return fmt.Errorf("corrupt history turn: %w", err)
				}
				if t.At.Before(q.Since) {
					return nil
				}
				t.Terms = nil
				out = append(out, t)
			}
			if seq == 0 {
				return nil
			}
			hi = seq - 1
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: history search: %w", err)
	}
	return out, nil
}

// join intersects the posting lists of several terms newest first by
// leapfrogging: every list jumps to its largest sequence at or below the
// smallest current one until all agree.
type join struct {
	lists []*postCursor
}

func newJoin(idx *bbolt.Bucket, terms []string) *join {
	j := &join{}
	for _, t := range terms {
		j.lists = append(j.lists, &postCursor{c: idx.Cursor(), prefix: postPrefix(t)})
	}
	return j
}

// next returns the largest sequence <= hi that every term indexes. Each
// pass lowers hi to the largest entry at or below it of each term; a pass
// that lowers nothing found hi in all of them.
func (j *join) next(hi uint64) (uint64, bool, error) {
	for {
		agree := true
		for _, l := range j.lists {
			seq, ok, err := l.seekLE(hi)
			if err != nil || !ok {
				return 0, false, err
			}
			if seq != hi {
				hi, agree = seq, false
			}
		}
		if agree {
			return hi, true, nil
		}
	}
}

func (h *history) Forget(ctx context.Context, log, principal string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err := (*Store)(h).update(func(tx *bbolt.Tx) error {
		n = 0
		root := tx.Bucket(bktHistory)
		if root == nil || root.Bucket([]byte(log)) == nil {
			return nil
		}
		lb := root.Bucket([]byte(log))
		turns, terms := lb.Bucket(bktTurns), lb.Bucket(bktTerms)
		if principal == "" {
			n = counter(lb, keyTurnCount)
			if old := lb.Get(keyOldest); old != nil {
				if idx := tx.Bucket(bktHistoryOldest); idx != nil {
					if err := idx.Delete(old); err != nil {
						return err
					}
				}
			}
			return root.DeleteBucket([]byte(log))
		}
		var dead doomed
		err := turns.ForEach(func(k, v []byte) error {
			var t store.Turn
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("corrupt history turn: %w", err)
			}
			if t.Principal == principal {
				dead.add(k, t)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := dead.drop(turns, terms); err != nil {
			return err
		}
		n = len(dead.keys)
		if err := setCounter(lb, keyTurnCount, max(0, counter(lb, keyTurnCount)-n)); err != nil {
			return err
		}
		return setOldest(tx, lb, log, turns)
	})
	if err != nil {
		return 0, fmt.Errorf("bolt: history forget: %w", err)
	}
	return n, nil
}

func (h *history) Prune(ctx context.Context, cutoff time.Time) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	var oldest time.Time
	cut := nanos(cutoff)
	err := (*Store)(h).update(func(tx *bbolt.Tx) error {
		oldest = time.Time{}
		idx := tx.Bucket(bktHistoryOldest)
		if idx == nil {
			return nil
		}
		var logs []string
		c := idx.Cursor()
		for k, _ := c.First(); k != nil && binaryU64(k[:8]) < cut; k, _ = c.Next() {
			logs = append(logs, string(k[8:]))
		}
		root := tx.Bucket(bktHistory)
		for _, log := range logs {
			lb := root.Bucket([]byte(log))
			if lb == nil {
				continue
			}
			turns, terms := lb.Bucket(bktTurns), lb.Bucket(bktTerms)
			if err := trimLog(lb, turns, terms, int(^uint(0)>>1), cut); err != nil {
				return err
			}
			if err := setOldest(tx, lb, log, turns); err != nil {
				return err
			}
		}
		if k, _ := idx.Cursor().First(); k != nil {
			oldest = time.Unix(0, int64(binaryU64(k[:8])))
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("bolt: history prune: %w", err)
	}
	return oldest, nil
}
