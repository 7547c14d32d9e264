package render

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
)

// A line whose markup is over the limit but whose plain text fits in the
// room left in the current part is counted in that part, so the next
// line never pushes it past the limit.
func TestChat_EveryPartWithinTheLimit(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	for limit := 20; limit <= 120; limit += 7 {
		st := ChatStyle{
			Limit:  limit,
			Escape: func(s string) string { return s },
			Bold:   func(h string) string { return "*" + h + "*" },
			Link:   func(u, title string) string { return "<" + u + "|" + title + ">" },
		}
		var items []delivery.Item
		for i := range 6 {
			items = append(items, delivery.Item{ID: fmt.Sprint(i), Title: strings.Repeat("t", i*3+1),
				URL: "https://example.edu/" + strings.Repeat("p", limit/2), Change: "new"})
		}
		m := delivery.Message{Kind: delivery.KindChanged, TaskID: "t-1", TaskName: "News", Items: items}
		for _, part := range Chat(m, "en", time.UTC, now, st) {
			if n := Length(part); n > limit {
				t.Fatalf("limit %d: a part of %d characters:\n%s", limit, n, part)
			}
		}
	}
}
