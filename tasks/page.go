package tasks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-bridge/herald/store"
)

// pagedCatalog is a catalog that reads one page of records in id order
// without reading the rest.
type pagedCatalog interface {
	Page(ctx context.Context, after string, limit int) ([]store.Record, error)
}

// MaxPage is the most tasks one page of a listing holds.
const MaxPage = 1000

// ListPage returns at most limit live tasks (not deleted) with ids after
// after, in id order, for an admin's listing: a page of a large catalog
// costs its tasks, not the catalog. next is the id to pass as after for
// the next page, "" after the last.
func (m *Manager) ListPage(ctx context.Context, after string, limit int) (page []*Task, next string, err error) {
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	pc, ok := m.store.Catalog().(pagedCatalog)
	if !ok {
		all, err := m.All(ctx)
		if err != nil {
			return nil, "", err
		}
		return pageOf(all, after, limit)
	}
	cursor := after
	for {
		want := limit - len(page)
		recs, err := pc.Page(ctx, cursor, want)
		if err != nil {
			return nil, "", fmt.Errorf("list tasks: %w", err)
		}
		for _, r := range recs {
			t, err := decodeTask(r.Value, r.Revision)
			if err != nil {
				m.log.Error().Str("task", r.ID).Err(err).Msg("skipping unreadable task record")
				continue
			}
			if t.State != Deleted {
				page = append(page, t)
			}
		}
		if len(recs) < want {
			return page, "", nil // the catalog ended
		}
		cursor = recs[len(recs)-1].ID
		if len(page) == limit {
			return page, cursor, nil
		}
	}
}

// pageOf pages a catalog that can only be read whole.
func pageOf(all []*Task, after string, limit int) ([]*Task, string, error) {
	slices.SortFunc(all, func(a, b *Task) int { return strings.Compare(a.ID, b.ID) })
	var page []*Task
	for _, t := range all {
		if t.ID <= after || t.State == Deleted {
			continue
		}
		if len(page) == limit {
			return page, page[len(page)-1].ID, nil
		}
		page = append(page, t)
	}
	return page, "", nil
}

// Count is how many live tasks there are in all (the I7 total).
func (m *Manager) Count(ctx context.Context) (int, error) {
	n, err := countLive(ctx, m.store.Catalog(), "")
	return n.total, err
}
