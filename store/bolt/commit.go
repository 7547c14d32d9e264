package bolt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// committer is the group commit behind every write: callers queue a
// function, one goroutine runs everything queued so far in one bbolt
// transaction, so concurrent writers share one fsync. A lone writer pays no
// batching delay (unlike bbolt's DB.Batch, which waits for its timer).
type committer struct {
	db       *bbolt.DB
	ov       *overlay // logged ledger operations (overlay.go)
	maxBatch int

	mu     sync.RWMutex // guards closed against sends on calls
	closed bool
	calls  chan *call
	done   chan struct{}

	stats commitStats
}

// commitStats counts the committer's work (CommitStats).
type commitStats struct {
	txs, calls atomic.Int64
	busy       atomic.Int64 // nanoseconds inside transactions
}

type call struct {
	fn  func(tx *bbolt.Tx) error
	op  *logOp // instead of fn: a logged ledger operation
	err chan error
}

// CommitStats is what the group committer has done since the store opened.
type CommitStats struct {
	Transactions int64         // write transactions and ledger log rounds (one fsync round each)
	Writes       int64         // writes they carried
	Busy         time.Duration // time spent inside them, fsync included
}

// CommitStats reports the group committer's counters, for metrics.
func (s *Store) CommitStats() CommitStats {
	st := &s.gc.stats
	return CommitStats{Transactions: st.txs.Load(), Writes: st.calls.Load(), Busy: time.Duration(st.busy.Load())}
}

func newCommitter(db *bbolt.DB, ov *overlay, maxBatch int) *committer {
	c := &committer{db: db, ov: ov, maxBatch: maxBatch, calls: make(chan *call, maxBatch), done: make(chan struct{})}
	go c.loop()
	return c
}

var errClosed = fmt.Errorf("bolt: store closed: %w", store.ErrUnavailable)

func (c *committer) do(fn func(tx *bbolt.Tx) error) error {
	return c.send(&call{fn: fn, err: make(chan error, 1)})
}

// queue runs a logged ledger operation in the next round.
func (c *committer) queue(op *logOp) error {
	return c.send(&call{op: op, err: make(chan error, 1)})
}

func (c *committer) send(cl *call) error {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return errClosed
	}
	c.calls <- cl
	c.mu.RUnlock()
	return <-cl.err
}

// close stops accepting writes, lets queued ones finish and waits for the
// loop to end.
func (c *committer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.calls)
	}
	c.mu.Unlock()
	<-c.done
}

func (c *committer) loop() {
	defer close(c.done)
	batch := make([]*call, 0, c.maxBatch)
	for first := range c.calls {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < c.maxBatch {
			select {
			case cl, ok := <-c.calls:
				if !ok {
					break drain
				}
				batch = append(batch, cl)
			default:
				break drain
			}
		}
		c.ov.round(c, batch)
	}
}

// run executes batch in one transaction (the round's bbolt part). A function failing with a
// business error (which by contract wrote nothing) gets its error while
// the others commit; any other failure rolls the transaction back and
// every function runs again on its own.
func (c *committer) run(batch []*call) {
	start := time.Now()
	defer func() {
		c.stats.txs.Add(1)
		c.stats.calls.Add(int64(len(batch)))
		c.stats.busy.Add(int64(time.Since(start)))
	}()
	errs := make([]error, len(batch))
	err := c.db.Update(func(tx *bbolt.Tx) error {
		for i, cl := range batch {
			errs[i] = safely(cl.fn, tx)
			if errs[i] != nil && !clean(errs[i]) {
				return errs[i]
			}
		}
		return nil
	})
	if err == nil {
		for i, cl := range batch {
			cl.err <- errs[i]
		}
		return
	}
	if len(batch) == 1 {
		batch[0].err <- err
		return
	}
	for _, cl := range batch {
		cl.err <- c.db.Update(func(tx *bbolt.Tx) error { return safely(cl.fn, tx) })
	}
}

func safely(fn func(tx *bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("bolt: write panicked: %v", p)
		}
	}()
	return fn(tx)
}

// clean reports whether err is a refusal that is decided before any write.
func clean(err error) bool {
	for _, s := range []error{store.ErrNotFound, store.ErrConflict, store.ErrIllegalTransition,
		store.ErrStaleEpoch, store.ErrLeaseHeld, store.ErrLeaseLost, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
