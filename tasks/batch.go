package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/herald-bridge/herald/store"
)

// batchCatalog is a catalog that writes many records in one transaction
// (the embedded store: one disk sync for all).
type batchCatalog interface {
	PutAll(ctx context.Context, f store.Fence, puts []store.CatalogPut) ([]uint64, error)
}

// createBatch is how many new records go in one transaction: large enough
// that a file of many tasks costs a few syncs, small enough that one
// transaction stays a few MiB.
const createBatch = 5000

// storeParallel is how many single writes go at once to a store without
// batches (Redis: round trips overlap; bbolt: group commit joins them).
const storeParallel = 32

// putNew stores new records (expected revision 0) in batches where the
// store can, else several at once. It returns the records not stored, by
// id, with why.
func putNew(ctx context.Context, cat store.Catalog, puts []store.CatalogPut) map[string]error {
	failed := map[string]error{}
	if bc, ok := cat.(batchCatalog); ok {
		for start := 0; start < len(puts); start += createBatch {
			part := puts[start:min(start+createBatch, len(puts))]
			revs, err := bc.PutAll(ctx, store.Fence{}, part)
			for i, p := range part {
				switch {
				case err != nil:
					failed[p.ID] = err
				case revs[i] == 0:
					failed[p.ID] = fmt.Errorf("id already used: %w", store.ErrConflict)
				}
			}
		}
		return failed
	}
	var mu sync.Mutex
	eachAtOnce(len(puts), func(i int) {
		p := puts[i]
		if _, err := cat.Put(ctx, store.Fence{}, p.ID, 0, p.Value); err != nil {
			mu.Lock()
			failed[p.ID] = err
			mu.Unlock()
		}
	})
	return failed
}

// eachAtOnce calls fn(0..n-1), storeParallel at a time.
func eachAtOnce(n int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, storeParallel)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// joinLocked collects errors from several goroutines.
type joinLocked struct {
	mu   sync.Mutex
	errs []error
}

func (j *joinLocked) add(err error) {
	j.mu.Lock()
	j.errs = append(j.errs, err)
	j.mu.Unlock()
}

func (j *joinLocked) err() error { return errors.Join(j.errs...) }
