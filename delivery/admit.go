package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/herald-bridge/herald/store"
)

// EffectKey is the claim-once key of one effect: a stable hash of
// (task id, event identity, recipient) (I1).
func EffectKey(taskID, identity, recipient string) string {
	h := sha256.New()
	h.Write([]byte(taskID))
	h.Write([]byte{0})
	h.Write([]byte(identity))
	h.Write([]byte{0})
	h.Write([]byte(recipient))
	return "fx_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// ChangeTTL is how long a change notice stays worth sending.
const ChangeTTL = 24 * time.Hour

// ErrAdmission is an admission that lacks its source, identity or recipients.
var ErrAdmission = errors.New("invalid admission")

// Admission asks to claim effects that do not come from a watch run:
// inbound hooks, test pushes, notices. It is the same claim mechanism as
// runs, so I1 holds everywhere.
type Admission struct {
	Source     string // task id, "hook:<name>", "test:<who>"
	Identity   string // event identity: delivery id, notice id
	Recipients []string
	Message    Message
	TTL        time.Duration // 0: ChangeTTL
}

// Direct hands pushes to free local delivery workers (the Dispatcher).
type Direct interface {
	Reserve(ctx context.Context, recipient, taskID string) (worker string, release func(), ok bool)
	// Handoff sends fxs, whose payloads encode msg (so it need not be
	// decoded again).
	Handoff(fxs []store.Effect, msg Message, release func())
	// Unconfirmed is told of a claim in flight for the reserved worker
	// whose commit failed without a clear answer: it may have been stored,
	// and then nobody would send it.
	Unconfirmed(key string)
}

var _ Direct = (*Dispatcher)(nil)

// Admitter claims admissions in the ledger and queues them for delivery.
type Admitter struct {
	Ledger store.Ledger
	Now    func() time.Time // default time.Now
	// Wake is called after effects were queued (nil: nobody to wake).
	Wake func()
	// Direct, when set, lets an admission for one recipient claim its push
	// already in flight for a free local delivery worker and hand it over,
	// instead of queueing it (one durable round fewer).
	Direct Direct
}

// Admit claims one effect per recipient for a and queues them. A repeated
// identity claims nothing (CommitResult.Duplicates).
func (ad *Admitter) Admit(ctx context.Context, a Admission) (store.CommitResult, error) {
	if a.Source == "" || a.Identity == "" || len(a.Recipients) == 0 {
		return store.CommitResult{}, fmt.Errorf("admit: %w: source, identity and recipients are required", ErrAdmission)
	}
	now := time.Now()
	if ad.Now != nil {
		now = ad.Now()
	}
	if a.Message.OccurredAt.IsZero() {
		a.Message.OccurredAt = now
	}
	ttl := a.TTL
	if ttl <= 0 {
		ttl = ChangeTTL
	}
	payload, err := json.Marshal(a.Message)
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("admit: encode message: %w", err)
	}
	run := a.Source + "/" + a.Identity // retention reads it (store.KeptUntil)
	effects := make([]store.Effect, 0, len(a.Recipients))
	for _, r := range a.Recipients {
		effects = append(effects, store.Effect{
			Key: EffectKey(a.Source, a.Identity, r), TaskID: a.Source, Recipient: r,
			Kind: a.Message.Kind, Payload: payload, State: store.Pending,
			NotBefore: now, ExpiresAt: now.Add(ttl), CreatedAt: now, UpdatedAt: now, RunID: run,
		})
	}
	var worker string
	var release func()
	if ad.Direct != nil && len(effects) == 1 {
		if w, rel, ok := ad.Direct.Reserve(ctx, effects[0].Recipient, a.Source); ok {
			worker, release = w, rel
		}
	}
	res, err := ad.Ledger.Commit(ctx, store.RunCommit{TaskID: a.Source, Effects: effects, Worker: worker})
	if worker != "" {
		if err != nil || len(res.Claimed) == 0 {
			release()
			if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrStaleEpoch) {
				// The answer may be lost rather than the write (a broken
				// connection): if the claim was stored in flight for the
				// worker, it must not stay there unsent.
				ad.Direct.Unconfirmed(effects[0].Key)
			}
		} else {
			fx := effects[0]
			fx.InFlight, fx.Worker = true, worker
			fx.Attempts = []store.Attempt{{N: 1, Start: now, By: worker, Outcome: store.Pending}}
			ad.Direct.Handoff([]store.Effect{fx}, a.Message, release)
			return res, nil
		}
	}
	if err != nil {
		return res, fmt.Errorf("admit: %w", err)
	}
	if len(res.Claimed) > 0 && ad.Wake != nil {
		ad.Wake()
	}
	return res, nil
}
