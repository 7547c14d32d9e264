package inbox

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
)

// TestInboxCapNeverDropsUnreadSilently: with policy.limits.inbox_items at
// 3, read items make room first and nobody is told; when unread items
// must go, the owner finds one notice saying so in their language (not one
// per item dropped), and every dropped item is counted, read or not.
func TestInboxCapNeverDropsUnreadSilently(t *testing.T) {
	for _, tc := range []struct {
		lang, title string
	}{{"en", "Your inbox is full"}, {"zh", "收件箱已满"}} {
		t.Run(tc.lang, func(t *testing.T) {
			st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			var read, unread int
			s := New(st.Inbox(), WithLimit(3), WithDropped(func(r, u int) { read, unread = read+r, unread+u }))
			ctx := context.Background()
			send := func(n int) {
				t.Helper()
				d := testDelivery()
				d.Key, d.Lang = fmt.Sprintf("fx_%d", n), tc.lang
				d.Message.Title = fmt.Sprintf("notice %d", n)
				if out := s.Send(ctx, d); out.Result != delivery.Completed {
					t.Fatalf("send %d: %+v", n, out)
				}
			}
			owner := testDelivery().To.ID
			notices := func() int {
				items, err := st.Inbox().List(ctx, owner, store.InboxQuery{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, it := range items {
					if it.Title == tc.title {
						n++
					}
				}
				return n
			}

			for i := 1; i <= 3; i++ {
				send(i)
			}
			if _, err := st.Inbox().MarkRead(ctx, owner, "all"); err != nil {
				t.Fatal(err)
			}
			send(4)
			send(5)
			if read != 2 || unread != 0 || notices() != 0 {
				t.Fatalf("room made from read items: dropped %d read, %d unread, %d notices; want 2, 0, none", read, unread, notices())
			}
			for i := 6; i <= 9; i++ {
				send(i)
			}
			if notices() != 1 {
				t.Errorf("%d notices that the inbox is full, want exactly 1", notices())
			}
			// 9 pushes and 1 notice into 3 places: 7 dropped, 3 of them read.
			if read != 3 || unread != 4 {
				t.Errorf("counted %d read and %d unread dropped, want 3 and 4", read, unread)
			}
		})
	}
}
