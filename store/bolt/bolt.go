// Package bolt is herald's embedded storage backend: one bbolt file with
// one bucket per storage object (README, Architecture), a versioned schema
// with numbered migrations, and group commit for the ledger's hot path.
package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// Options configures a Store.
type Options struct {
	// Now is the store's clock, used for lease expiry, TTLs and the
	// timestamps of Commit. Default time.Now.
	Now func() time.Time
	// NoSync skips fsync after each transaction. Benchmarks only: a crash
	// may lose committed claims.
	NoSync bool
	// LockTimeout bounds the wait for bbolt's own file lock when another
	// process has the file open. Default 1s.
	LockTimeout time.Duration
	// MaxBatch caps how many queued writes share one transaction. Default 256.
	MaxBatch int
	// Retention prunes ended effects last changed longer ago than this
	// (prune.go). Zero keeps them.
	Retention time.Duration
}

func (o *Options) validate() error {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LockTimeout < 0 {
		return errors.New("bolt: negative lock timeout")
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = time.Second
	}
	if o.MaxBatch < 0 {
		return errors.New("bolt: negative max batch")
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 256
	}
	return nil
}

// Bucket names: one per storage object, plus the ledger's indexes.
var (
	bktMeta        = []byte("meta")
	bktCatalog     = []byte("catalog")
	bktSnapshots   = []byte("snapshots")
	bktEffects     = []byte("effects")      // schema 1: key -> effect record (JSON); see effects.go for schema 2
	bktQueue       = []byte("effect_queue") // schema 1: notBefore(8) seq(8) key -> nil
	bktByTask      = []byte("effect_task")  // schema 1: task 0x00 seq(8) -> key
	bktInFlight    = []byte("effect_inflight")
	bktLeases      = []byte("leases")
	bktLeaseEpochs = []byte("lease_epochs") // name -> last epoch; never decreases
	bktDedup       = []byte("dedup")
	bktInbox       = []byte("inbox") // principal -> {items, keys, meta}
	bktRuns        = []byte("runs")  // task -> seq(8) -> run
	bktDialogs     = []byte("dialogs")
	bktChannels    = []byte("channels")
	bktBuckets     = []byte("rate_buckets") // name -> theoretical arrival time (8, ns)

	keySchema = []byte("schema")
)

// migrations[i] moves the schema from version i to i+1. Append only.
var migrations = []func(tx *bbolt.Tx) error{
	// 0 -> 1: the initial buckets.
	func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bktCatalog, bktSnapshots, bktEffects, bktQueue, bktByTask,
			bktInFlight, bktLeases, bktLeaseEpochs, bktDedup, bktInbox, bktRuns, bktDialogs, bktChannels} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		return nil
	},
	// 1 -> 2: effects split into an immutable body and a small mutable
	// state, both keyed by claim sequence (effects.go).
	migrateSplitEffects,
	// 2 -> 3: shared rate buckets (buckets.go).
	func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bktBuckets)
		return err
	},
	// 3 -> 4: inbox item ids in decimal (migrate.go).
	migrateInboxDecimalIDs,
}

// initialMmapSize is the address space mapped at open (not memory used):
// 1 GiB on 64-bit Unix. Windows sizes the file to the mapping and 32-bit
// platforms lack the address space, so they keep bbolt's own growth.
var initialMmapSize = func() int {
	if strconv.IntSize < 64 || runtime.GOOS == "windows" {
		return 0
	}
	return 1 << 30
}()

// SchemaVersion is the schema version this binary writes.
var SchemaVersion = uint64(len(migrations))

// Store is the bbolt implementation of store.Store. It is safe for
// concurrent use.
type Store struct {
	path string
	db   *bbolt.DB
	now  func() time.Time
	gc   *committer
	jr   *journal // the sending journal (journal.go)
	ov   *overlay // logged ledger effects (overlay.go)

	leftover   string // an unfinished restore's copy beside the store (Leftover)
	closeOnce  sync.Once
	pruneFrom  atomic.Uint64 // where the next prune pass starts (prune.go)
	stopPrune  chan struct{}
	prunerDone chan struct{}
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the bbolt file at path, migrates its
// schema and starts the group committer. It refuses a file written by a
// newer binary with store.ErrNewerSchema, and a damaged one with an error
// wrapping ErrDamaged, without writing to it: before bbolt maps an
// existing file, its structure is checked (filecheck.go). Where a restore
// left its unfinished copy and no store, Open creates none and fails with
// ErrInterruptedRestore.
func Open(path string, opts Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	leftover, err := restoreLeftover(path)
	if err == nil {
		err = checkExisting(path, opts.LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	s, err := open(path, opts)
	if err != nil {
		return nil, err
	}
	s.leftover = leftover
	return s, nil
}

// checkExisting checks the structure of the file at path, if there is one.
func checkExisting(path string, lockTimeout time.Duration) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	return checkFile(path, lockTimeout)
}

func open(path string, opts Options) (*Store, error) {
	db, err := openGuarded(path, &bbolt.Options{
		Timeout: opts.LockTimeout,
		NoSync:  opts.NoSync,
		// The freelist is rebuilt from the pages on open instead of being
		// written by every commit: one page run less per transaction.
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
		// Map well ahead of the file so a growing file rarely remaps; a
		// remap waits for every open read transaction and stalls the
		// committer behind readers (and new readers behind it).
		InitialMmapSize: initialMmapSize,
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	if err := guarded(path, func() error { return migrate(db) }); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	jr := newJournal(path)
	ov, err := openOverlay(db, jr.dir)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	s := &Store{path: path, db: db, now: opts.Now, gc: newCommitter(db, ov, opts.MaxBatch), jr: jr, ov: ov}
	ov.start(s.gc)
	s.stopPrune, s.prunerDone = make(chan struct{}), make(chan struct{})
	if opts.Retention > 0 {
		go s.pruner(opts.Retention, s.stopPrune, s.prunerDone)
	} else {
		close(s.prunerDone)
	}
	return s, nil
}

func migrate(db *bbolt.DB) error {
	return db.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bktMeta)
		if err != nil {
			return fmt.Errorf("create meta bucket: %w", err)
		}
		var v uint64
		if b := meta.Get(keySchema); b != nil {
			if len(b) != 8 {
				return fmt.Errorf("corrupt schema record (%d bytes)", len(b))
			}
			v = binary.BigEndian.Uint64(b)
		}
		if v > SchemaVersion {
			return fmt.Errorf("file schema %d, binary schema %d: %w", v, SchemaVersion, store.ErrNewerSchema)
		}
		for ; v < SchemaVersion; v++ {
			if err := migrations[v](tx); err != nil {
				return fmt.Errorf("migrate schema %d -> %d: %w", v, v+1, err)
			}
		}
		return meta.Put(keySchema, u64(v))
	})
}

// Catalog returns the task catalog.
func (s *Store) Catalog() store.Catalog { return (*catalog)(s) }

// Snapshots returns the per-task snapshots.
func (s *Store) Snapshots() store.Snapshots { return (*snapshots)(s) }

// Ledger returns the effect ledger.
func (s *Store) Ledger() store.Ledger { return (*ledger)(s) }

// Leases returns the lease table.
func (s *Store) Leases() store.Leases { return (*leases)(s) }

// Dedup returns the TTL'd dedup set.
func (s *Store) Dedup() store.Dedup { return (*dedup)(s) }

// Inbox returns the per-principal inboxes.
func (s *Store) Inbox() store.Inbox { return (*inbox)(s) }

// Runs returns the run history.
func (s *Store) Runs() store.Runs { return (*runs)(s) }

// Dialogs returns the conversation state object.
func (s *Store) Dialogs() store.KV { return &kv{s: s, bucket: bktDialogs} }

// Channels returns the channel state object.
func (s *Store) Channels() store.KV { return &kv{s: s, bucket: bktChannels} }

// Buckets returns the rate buckets.
func (s *Store) Buckets() store.Buckets { return (*buckets)(s) }

// Ping reports whether the file still answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.view(func(tx *bbolt.Tx) error {
		if tx.Bucket(bktMeta) == nil {
			return errors.New("meta bucket missing")
		}
		return nil
	})
}

// Leftover names the copy an unfinished restore left beside the store,
// if there is one. Open kept the store it found and left the copy alone.
func (s *Store) Leftover() string { return s.leftover }

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close stops the group committer (queued writes finish first) and closes
// the file. Closing twice is harmless.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.stopPrune) })
	<-s.prunerDone
	cpErr := s.ov.close()
	s.gc.close()
	s.ov.log.close()
	s.jr.close()
	if err := s.db.Close(); err != nil && !errors.Is(err, bbolt.ErrDatabaseNotOpen) {
		return fmt.Errorf("bolt: close: %w", err)
	}
	if cpErr != nil {
		return fmt.Errorf("bolt: close: %w", cpErr)
	}
	return nil
}

// Sweep deletes expired dedup marks and expired dialog/channel entries and
// returns how many it removed. Reads already ignore expired entries; Sweep
// only reclaims space.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now := nanos(s.now())
	removed := 0
	err := s.update(func(tx *bbolt.Tx) error {
		removed = 0
		for _, name := range [][]byte{bktDedup, bktDialogs, bktChannels} {
			b := tx.Bucket(name)
			var dead [][]byte
			err := b.ForEach(func(k, v []byte) error {
				if expired(v, now) {
					dead = append(dead, k)
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range dead {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			removed += len(dead)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("bolt: sweep: %w", err)
	}
	return removed, nil
}

func (s *Store) view(fn func(tx *bbolt.Tx) error) error {
	err := s.db.View(fn)
	if errors.Is(err, bbolt.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// update runs fn in a shared write transaction (group commit). fn must
// either fail with a business error before writing anything, or succeed;
// it may run more than once, so it must reset its outputs first.
func (s *Store) update(fn func(tx *bbolt.Tx) error) error {
	return s.gc.do(fn)
}

// ---------------------------------------------------------------- encoding

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// nanos maps a time to a sortable unsigned key; the zero time (and any
// time before 1970) sorts first.
func nanos(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	n := t.UnixNano()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// withExpiry prefixes value with its expiry (0: never).
func withExpiry(now time.Time, ttl time.Duration, value []byte) []byte {
	var exp uint64
	if ttl > 0 {
		exp = nanos(now.Add(ttl))
	}
	out := make([]byte, 8+len(value))
	binary.BigEndian.PutUint64(out, exp)
	copy(out[8:], value)
	return out
}

func expired(v []byte, now uint64) bool {
	if len(v) < 8 {
		return true
	}
	exp := binary.BigEndian.Uint64(v)
	return exp != 0 && exp <= now
}

func binaryU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
