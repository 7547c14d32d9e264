// Package redis implements every storage object of package store on Redis
// with the same guarantees as the embedded backend.
//
// Every key starts with the configured prefix P (default "herald:"); the
// key layout is in keys.go.
//
// # Scripts and cluster slots
//
// Redis runs a Lua script atomically, and Redis Cluster refuses a script
// whose keys map to more than one slot. Each script below therefore touches
// keys of exactly one slot:
//
//   - the ledger commit reads the lease (fence, I5) and the catalog record
//     (task revision), writes the snapshot, claims each effect key once (I1),
//     indexes it under its task and queues it. These checks and writes must
//     be one atomic step, or a deposed owner could slip a commit in between
//     check and write; so lease, catalog, snapshot, effects, index and queue
//     all carry the {P} hash tag.
//   - catalog put/delete check the fence against the same lease record.
//   - effect transitions (begin, settle, hold, expire, redeliver, recover)
//     swap one effect and move it between the queue and the in-flight set.
//   - lease acquire/renew/release read and write one lease and its counter.
//   - inbox scripts touch one principal's keys, tagged {<principal>}.
//
// Effect transitions are computed in Go from the decoded effect, by the
// ledger's one state machine (store.Progress), and published by one
// compare-and-swap script: the swap succeeds only if the stored effect is
// still byte-for-byte (by SHA-1) the one the transition was computed from,
// so of several concurrent callers exactly one wins and the others re-read
// and see the new state. The queue is scored by NotBefore
// in microseconds; effects due at the same microsecond come out in key
// order.
//
// Clocks: lease expiry, effect times and due checks use Options.Now, so they
// agree with the owner's clock and are testable; dedup marks and dialog
// entries expire by Redis expiry.
package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// SchemaVersion is the layout version this binary writes. Open refuses a
// store whose recorded version is newer (store.ErrNewerSchema).
const SchemaVersion = 1

// DefaultKeyPrefix is the key prefix used when Options.KeyPrefix is empty.
const DefaultKeyPrefix = "herald:"

// DefaultPoolSize is how many connections to Redis one herald keeps at
// most, unless the URL says (pool_size=): every inbound request waiting
// for its claim and every delivery recording an attempt holds one for a
// round trip, and the client's own default (ten per CPU) made concurrent
// requests queue for a connection rather than for Redis.
const DefaultPoolSize = 128

// Options configure the Redis backend.
type Options struct {
	// KeyPrefix starts every key (default "herald:"). It may not contain
	// '{' or '}', which Redis Cluster reads as a hash tag.
	KeyPrefix string
	// Now is the clock for lease expiry and effect times (default time.Now).
	Now func() time.Time
	// Retention prunes ended effects whose end is longer ago than this
	// (prune.go). Zero keeps them.
	Retention time.Duration
	// Shards is the number of scheduling shards the replicas share
	// (store.redis.shards; 0: DefaultShards, at most MaxShards).
	Shards int
}

func (o *Options) validate() error {
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(o.KeyPrefix, "{}") {
		return errors.New("redis store: key prefix may not contain '{' or '}'")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Shards == 0 {
		o.Shards = DefaultShards
	}
	if o.Shards < 1 || o.Shards > MaxShards {
		return fmt.Errorf("redis store: shards must be between 1 and %d", MaxShards)
	}
	return nil
}

// Store is the Redis backend. It is safe for concurrent use.
type Store struct {
	rdb    goredis.UniversalClient
	now    func() time.Time
	keys   keyspace
	shards int

	catalog  *catalog
	snaps    *snapshots
	ledger   *ledger
	leases   *leases
	dedup    *dedup
	inbox    *inbox
	runs     *runs
	dialogs  *kv
	channels *kv
	buckets  *buckets
	history  *history

	stopPrune context.CancelFunc
	pruned    chan struct{}
}

var _ store.Store = (*Store)(nil)

// Open connects to the Redis server at url (redis://[user:pass@]host:port/db
// or rediss://...), checks that it answers and that the stored schema is not
// newer than this binary, and returns the store.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	ro, err := goredis.ParseURL(url)
	if err != nil {
		// The parse error never carries the password; the URL itself is
		// left out of the message on purpose (I10).
		return nil, fmt.Errorf("redis store: parse url: %w", err)
	}
	if ro.PoolSize == 0 { // not set in the URL (pool_size=)
		ro.PoolSize = DefaultPoolSize
	}
	s, err := New(ctx, goredis.NewClient(ro), opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// New builds the store on an existing client (a plain or a cluster client).
// The store owns the client: Close closes it, and so does a failed New.
func New(ctx context.Context, rdb goredis.UniversalClient, opts Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	s := &Store{
		rdb:    rdb,
		now:    opts.Now,
		keys:   newKeyspace(opts.KeyPrefix),
		shards: opts.Shards,
	}
	s.catalog = &catalog{s}
	s.snaps = &snapshots{s}
	s.ledger = &ledger{s}
	s.leases = &leases{s}
	s.dedup = &dedup{s}
	s.inbox = &inbox{s}
	s.runs = &runs{s}
	s.dialogs = &kv{s: s, prefix: s.keys.dialogPrefix()}
	s.channels = &kv{s: s, prefix: s.keys.channelPrefix()}
	s.buckets = &buckets{s}
	s.history = &history{s}
	if err := s.checkSchema(ctx); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	pctx, stop := context.WithCancel(context.Background())
	s.stopPrune, s.pruned = stop, make(chan struct{})
	go func() {
		defer close(s.pruned)
		if opts.Retention > 0 {
			s.pruner(pctx, opts.Retention)
		}
	}()
	return s, nil
}

func (s *Store) checkSchema(ctx context.Context) error {
	key := s.keys.schemaKey()
	if err := s.rdb.SetNX(ctx, key, SchemaVersion, 0).Err(); err != nil {
		return wrap("open", err)
	}
	v, err := s.rdb.Get(ctx, key).Result()
	if err != nil {
		return wrap("open", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("redis store: open: unreadable schema version %q", v)
	}
	if n > SchemaVersion {
		return fmt.Errorf("redis store: schema %d, binary supports %d: %w", n, SchemaVersion, store.ErrNewerSchema)
	}
	return nil
}

// Catalog returns the task catalog.
func (s *Store) Catalog() store.Catalog { return s.catalog }

// Snapshots returns the task snapshots.
func (s *Store) Snapshots() store.Snapshots { return s.snaps }

// Ledger returns the effect ledger and delivery queue.
func (s *Store) Ledger() store.Ledger { return s.ledger }

// Leases returns the leases.
func (s *Store) Leases() store.Leases { return s.leases }

// Dedup returns the dedup marks.
func (s *Store) Dedup() store.Dedup { return s.dedup }

// Inbox returns the per-principal inboxes.
func (s *Store) Inbox() store.Inbox { return s.inbox }

// Runs returns the run history.
func (s *Store) Runs() store.Runs { return s.runs }

// Dialogs returns the conversation state.
func (s *Store) Dialogs() store.KV { return s.dialogs }

// Channels returns the channel state.
func (s *Store) Channels() store.KV { return s.channels }

// Buckets returns the rate buckets.
func (s *Store) Buckets() store.Buckets { return s.buckets }

// Ping sends PING and reports store.ErrUnavailable when Redis does not answer.
func (s *Store) Ping(ctx context.Context) error {
	return wrap("ping", s.rdb.Ping(ctx).Err())
}

// Close closes the client.
func (s *Store) Close() error {
	s.stopPrune()
	<-s.pruned
	if err := s.rdb.Close(); err != nil && !errors.Is(err, goredis.ErrClosed) {
		return fmt.Errorf("redis store: close: %w", err)
	}
	return nil
}

// wrap adds context to err and classifies it: anything that is not a reply
// from a working server (connection refused, reset, timeout, closed client,
// a server still loading or without a master) wraps store.ErrUnavailable.
// Cancellation by the caller stays a context error.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("redis store: %s: %w", op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("redis store: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("redis store: %s: %w", op, err)
}

func unavailable(err error) bool {
	if errors.Is(err, goredis.ErrClosed) {
		return true
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		return goredis.IsLoadingError(err) || goredis.IsReadOnlyError(err) ||
			goredis.IsClusterDownError(err) || goredis.IsTryAgainError(err) ||
			goredis.IsMasterDownError(err)
	}
	// Not a server reply: the network, a pool timeout or a deadline.
	return true
}

// micros is the queue and lease score of t: microseconds since the epoch,
// exact in a Lua/ZSET double for any date this service will see.
func micros(t time.Time) int64 { return t.UnixMicro() }
