package store

import (
	"context"
	"time"
)

// Pruner is a store that deletes ended effects (completed, failed,
// unknown) whose last change is older than cutoff, with their claims and
// index entries (README, Performance and footprint). A pruned key may be
// claimed again. Both backends also prune on their own, on the retention
// they were opened with; Prune is one pass of that, on demand.
type Pruner interface {
	Prune(ctx context.Context, cutoff time.Time) (int, error)
}
