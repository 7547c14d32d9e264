package store

import (
	"context"
	"strings"
	"time"
)

// Pruner is a store that deletes ended effects (completed, failed,
// unknown) whose last change is older than cutoff, with their claims and
// index entries (docs/performance.md, Performance and footprint), except those kept
// longer (KeptUntil). A pruned key may be claimed again. Both backends
// also prune on their own, on the retention they were opened with; Prune
// is one pass of that, on demand.
type Pruner interface {
	Prune(ctx context.Context, cutoff time.Time) (int, error)
}

// ReplayWindow is how long, at least, the ledger keeps the claim of a
// delivery claimed under the digest of its body (a GitHub-format hook's),
// whatever the retention: the same body sent again within it finds its
// claim and is dropped. Such a hook's signature neither dates nor names a
// delivery, so this window is all that stands between a captured delivery
// and its replay. Claims under a delivery id go on the retention alone:
// their signature dates them.
const ReplayWindow = 24 * time.Hour

// HookSource prefixes the task id of an inbound hook's claims
// ("hook:<name>"), and DigestIdentity the identity of a delivery claimed
// under the digest of its body ("sha256:<hex>"). An admission's claims
// carry "<source>/<identity>" as their run (delivery.Admitter).
const (
	HookSource     = "hook:"
	DigestIdentity = "sha256:"
)

// KeptUntil is when an ended effect of taskID, from run runID, claimed at
// created, may be pruned at the earliest, whatever the retention:
// ReplayWindow after the claim for a hook delivery claimed under its
// body's digest; the zero time for the rest.
func KeptUntil(taskID, runID string, created time.Time) time.Time {
	if !strings.HasPrefix(taskID, HookSource) || !strings.HasPrefix(runID, taskID+"/"+DigestIdentity) || created.IsZero() {
		return time.Time{}
	}
	return created.Add(ReplayWindow)
}
