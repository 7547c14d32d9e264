package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/herald-bridge/herald/store"
)

// The inbox conformance tests: one item per effect key, newest first,
// read flags, and the cap (the caller's limit: read items go first).

// appended is the stored item of an Append.
func appended(a store.InboxAppend, err error) (store.InboxItem, error) { return a.Item, err }

func item(p, key, title string) store.InboxItem {
	return store.InboxItem{Principal: p, EffectKey: key, Title: title, Body: []byte(`{"text":"` + title + `"}`)}
}

func titles(items []store.InboxItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Title
	}
	return out
}

func wantTitles(t *testing.T, got []store.InboxItem, want ...string) {
	t.Helper()
	if g := titles(got); !slices.Equal(g, want) && !(len(g) == 0 && len(want) == 0) {
		t.Fatalf("titles = %v, want %v", g, want)
	}
}

func testInbox(t *testing.T, open Opener) {
	ctx := context.Background()
	const p, q = "telegram:10001", "feishu:ou_abc"

	t.Run("NewestFirstPerPrincipal", func(t *testing.T) {
		in := open(t).Inbox()
		ids := map[string]bool{}
		for _, title := range []string{"a", "b", "c"} {
			it := must(appended(in.Append(ctx, item(p, "k-"+title, title), 0)))(t)
			if it.ID == "" || ids[it.ID] || it.CreatedAt.IsZero() || it.Principal != p || it.Read {
				t.Fatalf("appended = %+v", it)
			}
			ids[it.ID] = true
		}
		must(appended(in.Append(ctx, item(q, "k-a", "q-a"), 0)))(t)
		got := must(in.List(ctx, p, store.InboxQuery{}))(t)
		wantTitles(t, got, "c", "b", "a")
		if string(got[0].Body) != `{"text":"c"}` || got[0].EffectKey != "k-c" {
			t.Fatalf("item = %+v", got[0])
		}
		wantTitles(t, must(in.List(ctx, q, store.InboxQuery{}))(t), "q-a")
		wantTitles(t, must(in.List(ctx, "console:nobody", store.InboxQuery{}))(t))
		if n := must(in.Unread(ctx, p))(t); n != 3 {
			t.Fatalf("unread = %d", n)
		}
	})

	t.Run("PagingBefore", func(t *testing.T) {
		in := open(t).Inbox()
		for i := 1; i <= 5; i++ {
			must(appended(in.Append(ctx, item(p, fmt.Sprint("k", i), fmt.Sprint(i)), 0)))(t)
		}
		page := must(in.List(ctx, p, store.InboxQuery{Limit: 2}))(t)
		wantTitles(t, page, "5", "4")
		page = must(in.List(ctx, p, store.InboxQuery{Limit: 2, Before: page[1].ID}))(t)
		wantTitles(t, page, "3", "2")
		page = must(in.List(ctx, p, store.InboxQuery{Limit: 2, Before: page[1].ID}))(t)
		wantTitles(t, page, "1")
		wantTitles(t, must(in.List(ctx, p, store.InboxQuery{Limit: 2, Before: page[0].ID}))(t))
	})

	t.Run("AppendIdempotentByEffectKey", func(t *testing.T) {
		in := open(t).Inbox()
		first := must(appended(in.Append(ctx, item(p, "k1", "once"), 0)))(t)
		again := must(appended(in.Append(ctx, item(p, "k1", "twice"), 0)))(t)
		if again.ID != first.ID || again.Title != "once" {
			t.Fatalf("second append = %+v, want the first %+v", again, first)
		}
		wantTitles(t, must(in.List(ctx, p, store.InboxQuery{}))(t), "once")
		if n := must(in.Unread(ctx, p))(t); n != 1 {
			t.Fatalf("unread = %d", n)
		}
	})

	t.Run("MarkReadAndUnreadOnly", func(t *testing.T) {
		in := open(t).Inbox()
		var ids []string
		for _, title := range []string{"a", "b", "c", "d"} {
			ids = append(ids, must(appended(in.Append(ctx, item(p, "k-"+title, title), 0)))(t).ID)
		}
		must(appended(in.Append(ctx, item(q, "k-q", "q"), 0)))(t)
		if n := must(in.MarkRead(ctx, p, ids[1]))(t); n != 1 {
			t.Fatalf("MarkRead one = %d", n)
		}
		if n := must(in.MarkRead(ctx, p, ids[1]))(t); n != 0 {
			t.Fatalf("MarkRead again = %d", n)
		}
		if n := must(in.Unread(ctx, p))(t); n != 3 {
			t.Fatalf("unread = %d", n)
		}
		wantTitles(t, must(in.List(ctx, p, store.InboxQuery{UnreadOnly: true}))(t), "d", "c", "a")
		wantTitles(t, must(in.List(ctx, p, store.InboxQuery{UnreadOnly: true, Limit: 2}))(t), "d", "c")
		if got := must(in.List(ctx, p, store.InboxQuery{}))(t); !got[2].Read || got[0].Read {
			t.Fatalf("read flags = %+v", got)
		}
		if n := must(in.MarkRead(ctx, p, "all"))(t); n != 3 {
			t.Fatalf("MarkRead all = %d", n)
		}
		if n := must(in.MarkRead(ctx, p, ""))(t); n != 0 {
			t.Fatalf("MarkRead all again = %d", n)
		}
		if n := must(in.Unread(ctx, p))(t); n != 0 {
			t.Fatalf("unread = %d", n)
		}
		if n := must(in.Unread(ctx, q))(t); n != 1 {
			t.Fatalf("other principal's unread = %d", n)
		}
	})

	t.Run("CapDropsOldestReadThenOldestUnread", func(t *testing.T) {
		in := open(t).Inbox()
		var ids []string
		for i := 1; i <= 10; i++ {
			ids = append(ids, must(appended(in.Append(ctx, item(p, fmt.Sprint("k", i), fmt.Sprint(i)), 0)))(t).ID)
		}
		must(in.MarkRead(ctx, p, ids[4]))(t) // "5"
		must(in.MarkRead(ctx, p, ids[5]))(t) // "6"
		// Fill to the cap from several writers (their relative order does
		// not matter here), then go over it one by one.
		const writers = 16
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := 11 + w; i <= store.InboxCap; i += writers {
					if _, err := in.Append(ctx, item(p, fmt.Sprint("k", i), fmt.Sprint(i)), 0); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("append: %v", err)
		}
		if n := must(in.Unread(ctx, p))(t); n != store.InboxCap-2 {
			t.Fatalf("unread at the cap = %d", n)
		}
		var read, unread int
		for i := store.InboxCap + 1; i <= store.InboxCap+5; i++ {
			res := must(in.Append(ctx, item(p, fmt.Sprint("k", i), fmt.Sprint(i)), 0))(t)
			read, unread = read+res.DroppedRead, unread+res.DroppedUnread
		}
		if read != 2 || unread != 3 {
			t.Fatalf("appends report %d read and %d unread dropped, want 2 and 3", read, unread)
		}
		all := must(in.List(ctx, p, store.InboxQuery{Limit: store.InboxCap + 10}))(t)
		if len(all) != store.InboxCap {
			t.Fatalf("inbox holds %d items, cap %d", len(all), store.InboxCap)
		}
		if n := must(in.Unread(ctx, p))(t); n != store.InboxCap {
			t.Fatalf("unread = %d, want %d", n, store.InboxCap)
		}
		// 1005 appended: the two read ones went first, then unread 1, 2, 3.
		oldest := titles(all[len(all)-3:])
		if !slices.Equal(oldest, []string{"8", "7", "4"}) {
			t.Fatalf("oldest kept = %v, want [8 7 4]", oldest)
		}
		if all[0].Title != fmt.Sprint(store.InboxCap+5) {
			t.Fatalf("newest = %q", all[0].Title)
		}
	})
	t.Run("CapIsTheCallersLimitAndCountsWhatWent", func(t *testing.T) {
		in := open(t).Inbox()
		var ids []string
		for i := 1; i <= 3; i++ {
			res := must(in.Append(ctx, item(p, fmt.Sprint("k", i), fmt.Sprint(i)), 3))(t)
			if res.DroppedRead+res.DroppedUnread != 0 {
				t.Fatalf("append %d under the limit dropped %+v", i, res)
			}
			ids = append(ids, res.Item.ID)
		}
		must(in.MarkRead(ctx, p, ids[1]))(t) // "2"
		res := must(in.Append(ctx, item(p, "k4", "4"), 3))(t)
		if res.DroppedRead != 1 || res.DroppedUnread != 0 {
			t.Fatalf("over the limit with one read item: dropped %d read, %d unread; want the read one", res.DroppedRead, res.DroppedUnread)
		}
		res = must(in.Append(ctx, item(p, "k5", "5"), 3))(t)
		if res.DroppedRead != 0 || res.DroppedUnread != 1 {
			t.Fatalf("over the limit with none read: dropped %d read, %d unread; want the oldest unread", res.DroppedRead, res.DroppedUnread)
		}
		wantTitles(t, must(in.List(ctx, p, store.InboxQuery{}))(t), "5", "4", "3")
		if again := must(in.Append(ctx, item(p, "k5", "5"), 3))(t); again.DroppedRead+again.DroppedUnread != 0 || again.Item.ID != res.Item.ID {
			t.Fatalf("appending a stored key again: %+v", again)
		}
		// A lower limit (a reload) trims at the next append.
		res = must(in.Append(ctx, item(p, "k6", "6"), 1))(t)
		if res.DroppedUnread != 3 {
			t.Fatalf("limit lowered to 1: dropped %d unread, want 3", res.DroppedUnread)
		}
		wantTitles(t, must(in.List(ctx, p, store.InboxQuery{}))(t), "6")
	})
}
