// Package store defines herald's storage objects as small interfaces that
// every backend (bbolt, Redis) implements with the same guarantees. The
// guarantees are proven by the conformance suite in store/storetest.
//
// Storage objects stay distinct (own bucket / key prefix each): the task
// catalog, snapshots, the effect ledger (with its delivery queue), leases,
// TTL'd dedup keys, rate buckets, inboxes, run history, conversation
// (dialog) state, channel state and conversation history.
package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Backends wrap them with context; callers test with errors.Is.
var (
	ErrNotFound          = errors.New("not found")
	ErrConflict          = errors.New("revision conflict")               // compare-and-swap lost
	ErrIllegalTransition = errors.New("illegal effect state transition") // e.g. completed -> pending
	ErrStaleEpoch        = errors.New("stale owner epoch")               // fence older than the lease's epoch (I5)
	ErrLeaseHeld         = errors.New("lease held by another holder")
	ErrLeaseLost         = errors.New("lease lost")
	ErrUnavailable       = errors.New("store unavailable") // backend unreachable: retry later
	ErrNewerSchema       = errors.New("store schema is newer than this binary")
)

// Store bundles every storage object of one backend.
type Store interface {
	Catalog() Catalog
	Snapshots() Snapshots
	Ledger() Ledger
	Leases() Leases
	Dedup() Dedup
	Inbox() Inbox
	Runs() Runs
	Dialogs() KV      // conversation state (entries expire)
	Channels() KV     // channel credentials, offsets, inbox tokens
	Buckets() Buckets // shared rate buckets (robot pacing)
	History() History // conversation turns per principal or group chat, with their index
	// Ping reports whether the backend answers (readiness).
	Ping(ctx context.Context) error
	Close() error
}

// Fence carries the owner's lease epoch into a commit (I5). The zero Fence
// means "not fenced": used by admissions that are safe on any replica
// because claim-once already serialises them (inbound hooks, send-test).
type Fence struct {
	Lease string // lease name, e.g. "scheduler"
	Epoch uint64
}

// IsZero reports whether f carries no fence.
func (f Fence) IsZero() bool { return f.Lease == "" }

// ---------------------------------------------------------------- catalog

// Record is one versioned catalog entry. Value is opaque to the store (the
// task manager owns its schema). Revision grows on every change.
type Record struct {
	ID       string
	Revision uint64
	Value    []byte
}

// Catalog is the task catalog with revision compare-and-swap.
type Catalog interface {
	Get(ctx context.Context, id string) (Record, error)
	List(ctx context.Context) ([]Record, error)
	// Put writes value when the stored revision equals expect (0: the
	// record must not exist yet) and the fence is current. It returns the
	// new revision (expect+1). ErrConflict / ErrStaleEpoch otherwise.
	Put(ctx context.Context, f Fence, id string, expect uint64, value []byte) (uint64, error)
	// Delete removes the record (and its snapshot) under the same checks.
	Delete(ctx context.Context, f Fence, id string, expect uint64) error
}

// CatalogPut is one write of a batch: Catalog.Put's arguments.
type CatalogPut struct {
	ID     string
	Expect uint64
	Value  []byte
}

// Snapshots holds one opaque snapshot per task. Writes happen only inside
// Ledger.Commit so that "seen" and the run's claims commit together.
type Snapshots interface {
	Get(ctx context.Context, taskID string) ([]byte, error) // ErrNotFound when none
}

// ---------------------------------------------------------------- ledger

// EffectState is the ledger state of one effect (README, The promise: I3).
type EffectState string

const (
	// Pending: claimed and not yet ended. With InFlight false it waits in the
	// queue; with InFlight true an attempt has crossed (or is crossing) the
	// boundary and its outcome is not recorded yet.
	Pending   EffectState = "pending"
	Completed EffectState = "completed"
	Failed    EffectState = "failed"
	Unknown   EffectState = "unknown"
)

// RedeliveryMark starts the Error of the attempt entry a backend records
// for an explicit human redelivery (Ledger.Redeliver).
const RedeliveryMark = "redelivery requested"

// Attempt is one recorded delivery attempt of an effect.
type Attempt struct {
	N       int         `json:"n"`
	Start   time.Time   `json:"start"`
	End     time.Time   `json:"end,omitzero"`
	Part    int         `json:"part,omitempty"` // which part of a split message (0-based)
	By      string      `json:"by"`             // worker id, or the human who asked for a redelivery
	Outcome EffectState `json:"outcome"`        // pending while in flight; pending after a retry_after
	Error   string      `json:"error,omitempty"`
}

// Effect is one claimed push (or other irreversible effect). Key is a
// stable hash of (task id, event identity, recipient): the claim-once key.
type Effect struct {
	Key        string      `json:"key"`
	TaskID     string      `json:"task"`
	Recipient  string      `json:"recipient"`
	Kind       string      `json:"kind"`    // watch.changed | watch.deadline | inbound.event | task.state | test
	Payload    []byte      `json:"payload"` // the neutral message (delivery.Message JSON)
	State      EffectState `json:"state"`
	InFlight   bool        `json:"in_flight"`
	Worker     string      `json:"worker,omitempty"` // who holds the in-flight attempt
	Attempts   []Attempt   `json:"attempts,omitempty"`
	NotBefore  time.Time   `json:"not_before,omitzero"` // earliest next attempt
	ExpiresAt  time.Time   `json:"expires_at,omitzero"` // not sent by then: failed "expired"
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	Error      string      `json:"error,omitempty"`       // class/reason of the last outcome
	ProviderID string      `json:"provider_id,omitempty"` // provider's message id on completion
	RunID      string      `json:"run,omitempty"`
	// PartsSent counts the parts of a split message already accepted by the
	// provider; a redelivery or retry resumes from here.
	PartsSent int `json:"parts_sent,omitempty"`
	// Holds counts the holds (Ledger.Defer) the effect went through; with
	// the attempts it makes up the effect's Version (effectstate.go).
	Holds int `json:"holds,omitempty"`
}

// RunCommit is everything one run (or one admission) commits atomically:
// the task-revision and fence checks, the snapshot, and the claims.
type RunCommit struct {
	Fence        Fence
	TaskID       string
	TaskRevision uint64 // non-zero: refuse with ErrConflict unless the catalog record has this revision
	Snapshot     []byte // non-nil: replaces the task's snapshot
	Effects      []Effect
	// Worker, when set, claims the effects already in flight for that
	// worker, with their first attempt recorded, instead of queueing them:
	// the caller hands them to a free local worker that sends at once. A
	// crash before the send then reads as unknown, as for any attempt (I3).
	Worker string
}

// CommitResult tells which keys this commit claimed and which were
// already claimed before (and so were not queued again).
type CommitResult struct {
	Claimed    []string
	Duplicates []string
}

// Outcome is what a worker records after an attempt.
type Outcome struct {
	State      EffectState // Completed, Failed, Unknown, or Pending (retry: provably not sent)
	Error      string
	ProviderID string
	RetryAt    time.Time // with Pending: earliest next attempt
	PartsSent  int       // new value of Effect.PartsSent (parts accepted so far)
}

// Ledger is the effect ledger and, with it, the durable delivery queue.
type Ledger interface {
	// Commit claims each effect key once (I1), atomically with the snapshot
	// and the fence/revision checks. Claimed effects start Pending and
	// queued. Keys claimed before are reported as Duplicates, untouched.
	Commit(ctx context.Context, c RunCommit) (CommitResult, error)
	Get(ctx context.Context, key string) (Effect, error)
	// List returns a task's effects, newest first, at most limit (0: all).
	List(ctx context.Context, taskID string, limit int) ([]Effect, error)
	// Due returns queued effects (Pending, not in flight) with NotBefore <= now,
	// oldest first, at most limit.
	Due(ctx context.Context, now time.Time, limit int) ([]Effect, error)
	// NextDue returns the earliest NotBefore among queued effects.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// Begin marks the effect in flight for worker and records a new attempt
	// for part Effect.PartsSent. seen is the effect's Version when the
	// caller read it: if another attempt has begun since, or a hold has
	// put the effect off (quiet hours, an order wait, on any replica), the
	// caller's read is stale (a push put off to later may still read as
	// due), and Begin refuses rather than send it early, on any replica.
	// An effect never held has its number of attempts as its Version.
	// Exactly one of several concurrent callers wins; the others get
	// ErrIllegalTransition (not pending, already in flight, or read stale).
	Begin(ctx context.Context, key, worker string, seen int, now time.Time) (Effect, error)
	// Settle records the outcome of the in-flight attempt. Pending means the
	// attempt provably did not cross the boundary: the effect is queued again
	// at RetryAt. Completed/Failed/Unknown are final. Refuses when the effect
	// is not in flight (ErrIllegalTransition).
	Settle(ctx context.Context, key string, o Outcome, now time.Time) (Effect, error)
	// Defer holds a queued (not in flight) effect: it moves its NotBefore
	// to until without recording an attempt (quiet hours, mute, an order
	// wait), records why as its Error ("" keeps the one it has), and moves
	// its Version on (Progress.Hold). Refused otherwise.
	Defer(ctx context.Context, key string, until time.Time, reason string, now time.Time) (Effect, error)
	// Expire ends a queued (not in flight) effect as Failed with reason.
	Expire(ctx context.Context, key, reason string, now time.Time) (Effect, error)
	// Redeliver queues an ended effect again, due now (explicit human
	// replay); the attempt history records who. The effect's deadline
	// (ExpiresAt) no longer binds it. Refused while Pending.
	Redeliver(ctx context.Context, key, who string, now time.Time) (Effect, error)
	// Sending records, durably, that worker is about to send the attempts
	// named by refs (each the current in-flight attempt of its effect): once
	// it returns, their requests may leave the process. Called with no refs,
	// it opens worker's record before its first send; from then on an
	// attempt of worker that was never recorded provably did not cross the
	// boundary. ErrLeaseLost: worker was recovered as dead meanwhile and
	// must not send.
	Sending(ctx context.Context, worker string, refs []AttemptRef) error
	// Recover ends the in-flight attempts of workers that are not alive
	// (I3) and returns the effects it changed, in their new state:
	//   - an attempt its worker never recorded as Sending (the worker had
	//     opened its record) provably was not sent: queued again, due now;
	//   - an attempt that may have been sent is queued again, due at its
	//     start, when r.Replay allows (the recipient deduplicates by the
	//     key); else it becomes Unknown. The caller records unknown ones in
	//     the run history.
	// A worker that never opened its record, or whose record the backend
	// cannot trust (bbolt: written before a reboot), has every attempt
	// that may have been sent counted as such.
	Recover(ctx context.Context, r Recovery, now time.Time) ([]Effect, error)
}

// AttemptRef names one attempt of an effect: its key and Attempt.N.
type AttemptRef struct {
	Key string
	N   int
}

// Recovery tells Recover which workers are gone and which interrupted
// pushes may be sent again.
type Recovery struct {
	// Alive reports whether a worker still runs; nil: none does.
	Alive func(worker string) bool
	// Replay reports whether fx, whose last attempt may have reached the
	// provider, may be sent again under the same key. nil: never.
	Replay func(fx Effect) bool
}

// Interrupted reasons Recover records on the attempts it ends.
const (
	// InterruptedUnsent: the worker stopped before the request could leave.
	InterruptedUnsent = "interrupted before sending: queued again"
	// InterruptedReplayed: it may have been sent; the recipient
	// deduplicates by the key, so it is sent again under that key.
	InterruptedReplayed = "interrupted: sent again under the same key"
	// InterruptedUnknown: it may have been sent and cannot be repeated.
	InterruptedUnknown = "interrupted: worker stopped during the attempt"
)

// ---------------------------------------------------------------- leases

// Lease is a named, time-limited ownership with a fencing epoch that only
// grows: every new acquisition (after release, expiry or holder change)
// takes a higher epoch than any before it.
type Lease struct {
	Name    string
	Holder  string
	Epoch   uint64
	Expires time.Time
}

// Leases grants ownership (scheduler, telegram poller, ...).
type Leases interface {
	// Acquire takes the lease for holder, or renews it if holder already
	// holds it (same epoch). ErrLeaseHeld while another holder's lease is unexpired.
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// Renew extends a lease still held with l's epoch; ErrLeaseLost otherwise.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives the lease up if still held with l's epoch.
	Release(ctx context.Context, l Lease) error
	// Current returns the lease as stored (ErrNotFound if never taken).
	Current(ctx context.Context, name string) (Lease, error)
}

// ---------------------------------------------------------------- dedup

// Dedup remembers ids (inbound update ids, event ids) for a while.
type Dedup interface {
	// Mark records ns/id for ttl and reports whether it was new (first == true).
	Mark(ctx context.Context, ns, id string, ttl time.Duration) (first bool, err error)
}

// ---------------------------------------------------------------- buckets

// Buckets are token buckets shared by every process using the store, so
// an outbound rate limit (a group robot's messages per minute) holds
// across replicas and restarts.
type Buckets interface {
	// Take takes one token from bucket name, which holds at most burst
	// tokens and gains one every `every`. With no token left it takes
	// nothing and returns how long until one is there (wait > 0).
	// A bucket left alone for burst*every is full again.
	Take(ctx context.Context, name string, every time.Duration, burst int, now time.Time) (wait time.Duration, err error)
}

// ---------------------------------------------------------------- inbox

// InboxItem is one push stored for a principal.
type InboxItem struct {
	ID        string    `json:"id"` // assigned by the store, sortable, unique per principal
	Principal string    `json:"principal"`
	EffectKey string    `json:"effect_key"` // appending the same key twice stores one item
	Title     string    `json:"title"`
	Body      []byte    `json:"body"` // the neutral message JSON
	CreatedAt time.Time `json:"created_at"`
	Read      bool      `json:"read"`
}

// InboxQuery pages an inbox newest first.
type InboxQuery struct {
	Before     string // item id: return items older than it ("" = newest)
	Limit      int    // 0: 50
	UnreadOnly bool
}

// InboxCap is the most items kept per principal when Append is given no
// cap (policy.limits.inbox_items); beyond the cap the oldest read items
// are dropped first, then the oldest unread.
const InboxCap = 1000

// InboxAppend is what one Append did: the item as stored, and how many
// items the cap dropped to make room for it.
type InboxAppend struct {
	Item                       InboxItem
	DroppedRead, DroppedUnread int
}

// Inbox is the per-principal inbox.
type Inbox interface {
	// Append stores item, keeping at most limit items for its principal
	// (0: InboxCap): the oldest read items are dropped first, then the
	// oldest unread, and the result counts both. An effect key stored
	// already returns the stored item and drops nothing.
	Append(ctx context.Context, item InboxItem, limit int) (InboxAppend, error)
	List(ctx context.Context, principal string, q InboxQuery) ([]InboxItem, error)
	// MarkRead marks one item ("" or "all": every item) read; returns how many changed.
	MarkRead(ctx context.Context, principal, id string) (int, error)
	Unread(ctx context.Context, principal string) (int, error)
}

// ---------------------------------------------------------------- runs

// Runs is the bounded run history per task. Values are opaque records owned
// by the task manager; the store keeps the newest `keep`.
type Runs interface {
	Append(ctx context.Context, taskID string, run []byte, keep int) error
	// List returns newest first, at most limit (0: all kept).
	List(ctx context.Context, taskID string, limit int) ([][]byte, error)
}

// ---------------------------------------------------------------- kv

// KV is a small key-value object (dialog state, channel state). A ttl of 0
// keeps the entry until deleted.
type KV interface {
	Get(ctx context.Context, key string) ([]byte, error) // ErrNotFound when absent or expired
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Delete(ctx context.Context, key string) error
}

// Decide is how Recover ends the interrupted last attempt of fx. mayBeSent
// is false only when the worker had opened its record (Ledger.Sending) and
// never recorded this attempt. The new state is Pending (queued again,
// due at notBefore) or Unknown; reason goes on the attempt and the effect.
func (r Recovery) Decide(fx Effect, mayBeSent bool, now time.Time) (state EffectState, reason string, notBefore time.Time) {
	if !mayBeSent {
		return Pending, InterruptedUnsent, now
	}
	if r.Replay != nil && r.Replay(fx) {
		// Due at the attempt's start: effects sent as one message were
		// begun together, so they come back together and go out again
		// as the same message under the same key.
		at := now
		if n := len(fx.Attempts); n > 0 && !fx.Attempts[n-1].Start.IsZero() {
			at = fx.Attempts[n-1].Start
		}
		return Pending, InterruptedReplayed, at
	}
	return Unknown, InterruptedUnknown, time.Time{}
}

// LastAttempt is the number of fx's last attempt (0: none).
func LastAttempt(fx Effect) int {
	if n := len(fx.Attempts); n > 0 {
		return fx.Attempts[n-1].N
	}
	return 0
}
