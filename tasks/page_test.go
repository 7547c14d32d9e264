package tasks

import (
	"context"
	"testing"
)

// A listing of many tasks comes in pages in id order: every live task
// once, deleted ones left out, and a page never more than asked (I7:
// no answer grows with the catalog). On both stores.
func TestI7_TaskListComesInPages(t *testing.T) {
	onEachStore(t, 100, func(t *testing.T, m *Manager) {
		ctx := context.Background()
		if err := m.SetDeclared(ctx, manyDeclared(25, "")); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"bulk-00003", "bulk-00010", "bulk-00011"} {
			if _, err := m.Delete(ctx, "", id); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			page, next, err := m.ListPage(ctx, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 10 {
				t.Fatalf("a page of %d, asked for 10", len(page))
			}
			for _, tk := range page {
				got = append(got, tk.ID)
			}
			if next == "" {
				break
			}
			after = next
		}
		if len(got) != 22 {
			t.Fatalf("%d tasks listed, want the 22 live ones: %v", len(got), got)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Fatalf("listing out of id order or repeated at %d: %v", i, got)
			}
		}
		if n, err := m.Count(ctx); err != nil || n != 22 {
			t.Fatalf("count %d (%v), want 22", n, err)
		}
	})
}
