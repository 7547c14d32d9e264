package redis

import (
	"strconv"

	"github.com/herald-bridge/herald/store"
)

// The store's objects, each a view of the Store with the keys below.
type (
	catalog   struct{ s *Store }
	snapshots struct{ s *Store }
	ledger    struct{ s *Store }
	leases    struct{ s *Store }
	dedup     struct{ s *Store }
	inbox     struct{ s *Store }
	runs      struct{ s *Store }
	buckets   struct{ s *Store }
	history   struct{ s *Store }
	kv        struct {
		s      *Store
		prefix string
	}
)

var (
	_ store.Catalog   = (*catalog)(nil)
	_ store.Snapshots = (*snapshots)(nil)
	_ store.Ledger    = (*ledger)(nil)
	_ store.Leases    = (*leases)(nil)
	_ store.Dedup     = (*dedup)(nil)
	_ store.Inbox     = (*inbox)(nil)
	_ store.Runs      = (*runs)(nil)
	_ store.Buckets   = (*buckets)(nil)
	_ store.History   = (*history)(nil)
	_ store.KV        = (*kv)(nil)
)

// # Key layout
//
// Every key starts with the configured prefix P (default "herald:"). The
// objects that take part in the fenced, revision-checked ledger commit share
// the hash tag {P}, so that they live in one cluster slot:
//
//	{P}schema           stored schema version
//	{P}task:rec:<id>    catalog record (hash: rev, val)
//	{P}task:ids         set of catalog ids
//	{P}snap:<task>      task snapshot
//	{P}fx:e:<key>       effect (ledger entry, JSON)
//	{P}fx:t:<task>      zset: a task's effect keys in commit order
//	{P}fx:seq           commit sequence for fx:t
//	{P}fx:inflight      set: effect keys with an attempt in flight
//	{P}q                zset: queued effect keys scored by NotBefore (µs)
//	{P}fx:sending:<w>   hash: worker w's attempts about to be sent (key -> n)
//	{P}fx:sending       set: the workers with a sending record
//	{P}fx:ended         zset: ended effect keys scored by their end (retention)
//	{P}lease:h:<name>   lease (hash: holder, epoch, exp, expt)
//	{P}lease:n:<name>   lease epoch counter; INCR only, never reset
//	{P}sched:...        scheduling shards (shards.go)
//
// The other objects are independent of the ledger and spread over the
// cluster by their own keys:
//
//	P dd:<len(ns)>:<ns>:<id>             dedup marks (Redis expiry)
//	P inbox:{<principal>}:items|all|unread|read|keys|seq
//	P runs:<task>                        run history list (LTRIM)
//	P dlg:<key>                          dialog state (Redis expiry)
//	P chan:<key>                         channel state
//	P rb:<name>                          rate bucket (Redis expiry once full)
//	P hist:{<log>}:...                   conversation history (below)

// keyspace names the store's keys: the layout above, under one prefix.
type keyspace struct {
	prefix string // P
	tagged string // {P}
}

func newKeyspace(prefix string) keyspace { return keyspace{prefix: prefix, tagged: "{" + prefix + "}"} }

func (k keyspace) schemaKey() string             { return k.tagged + "schema" }
func (k keyspace) taskKey(id string) string      { return k.tagged + "task:rec:" + id }
func (k keyspace) taskIDsKey() string            { return k.tagged + "task:ids" }
func (k keyspace) snapKey(taskID string) string  { return k.tagged + "snap:" + taskID }
func (k keyspace) leaseKey(name string) string   { return k.tagged + "lease:h:" + name }
func (k keyspace) counterKey(name string) string { return k.tagged + "lease:n:" + name }

func (k keyspace) effectKey(key string) string       { return k.tagged + "fx:e:" + key }
func (k keyspace) taskEffectsKey(task string) string { return k.tagged + "fx:t:" + task }
func (k keyspace) seqKey() string                    { return k.tagged + "fx:seq" }
func (k keyspace) inflightKey() string               { return k.tagged + "fx:inflight" }
func (k keyspace) queueKey() string                  { return k.tagged + "q" }
func (k keyspace) sendingKey(worker string) string   { return k.tagged + "fx:sending:" + worker }
func (k keyspace) sendingSetKey() string             { return k.tagged + "fx:sending" }
func (k keyspace) endedKey() string                  { return k.tagged + "fx:ended" }

func (k keyspace) dedupKey(ns, id string) string {
	return k.prefix + "dd:" + strconv.Itoa(len(ns)) + ":" + ns + ":" + id
}
func (k keyspace) runsKey(taskID string) string { return k.prefix + "runs:" + taskID }
func (k keyspace) dialogPrefix() string         { return k.prefix + "dlg:" }
func (k keyspace) channelPrefix() string        { return k.prefix + "chan:" }
func (k keyspace) bucketKey(name string) string { return k.prefix + "rb:" + name }

// inboxKeys are one principal's keys; the {principal} hash tag keeps them in
// one cluster slot for the append and mark-read scripts.
type inboxKeys struct {
	items, all, unread, read, keys, seq string
}

func (k keyspace) inboxKeys(principal string) inboxKeys {
	b := k.prefix + "inbox:{" + principal + "}:"
	return inboxKeys{
		items:  b + "items",  // hash id -> item JSON (read flag kept apart)
		all:    b + "all",    // zset id by sequence
		unread: b + "unread", // zset id by sequence
		read:   b + "read",   // zset id by sequence
		keys:   b + "keys",   // hash effect key -> id
		seq:    b + "seq",
	}
}

// histKeys are one history log's keys. They share the hash tag {<log>},
// so each history script touches one cluster slot (the index keys a
// script derives from stored terms carry the same tag):
//
//	P hist:{<log>}:t          hash seq -> turn JSON (without id and terms)
//	P hist:{<log>}:w          hash seq -> the turn's terms, newline-separated
//	P hist:{<log>}:i          zset seq by seq: the log in append order
//	P hist:{<log>}:a          zset seq by time (µs): for the retention cut
//	P hist:{<log>}:seq        turn sequence
//	P hist:{<log>}:x:<term>   zset seq by seq: the inverted index
//	P hist:oldest             zset log by its oldest turn's time (µs)
type histKeys struct {
	base, t, w, i, a, seq, x string
}

func (k keyspace) histKeys(log string) histKeys {
	b := k.prefix + "hist:{" + log + "}:"
	return histKeys{base: b, t: b + "t", w: b + "w", i: b + "i", a: b + "a", seq: b + "seq", x: b + "x:"}
}

func (k histKeys) fixed() []string { return []string{k.t, k.w, k.i, k.a, k.seq} }

func (k keyspace) histOldest() string { return k.prefix + "hist:oldest" }
