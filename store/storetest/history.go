package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

func turn(log, who, text string, at time.Time, terms ...string) store.Turn {
	return store.Turn{Log: log, Principal: who, Chat: log, Text: text, Reply: "ok", At: at, Terms: terms}
}

func texts(ts []store.Turn) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Text)
	}
	return out
}

func wantTexts(t *testing.T, got []store.Turn, want ...string) {
	t.Helper()
	if g := texts(got); !slices.Equal(g, want) {
		t.Fatalf("turns = %q, want %q", g, want)
	}
}

func testHistory(t *testing.T, open Opener, reopen Reopener) {
	ctx := context.Background()

	t.Run("NewestFirstPerLog", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		for i, log := range []string{"telegram:1", "telegram:chat:-100", "telegram:1", "feishu:ou_a"} {
			got := must(h.Append(ctx, turn(log, "telegram:1", fmt.Sprint("m", i), now.Add(time.Duration(i)*time.Second), "m"), 0, time.Time{}))(t)
			if got.ID == "" || got.Log != log {
				t.Fatalf("appended = %+v", got)
			}
		}
		wantTexts(t, must(h.List(ctx, "telegram:1", store.HistoryQuery{}))(t), "m2", "m0")
		wantTexts(t, must(h.List(ctx, "telegram:chat:-100", store.HistoryQuery{}))(t), "m1")
		wantTexts(t, must(h.Search(ctx, "feishu:ou_a", []string{"m"}, store.HistoryQuery{}))(t), "m3")
		wantTexts(t, must(h.List(ctx, "nobody", store.HistoryQuery{}))(t))
		got := must(h.List(ctx, "telegram:1", store.HistoryQuery{Limit: 1}))(t)
		if got[0].Principal != "telegram:1" || got[0].Chat != "telegram:1" || got[0].Reply != "ok" || !got[0].At.Equal(now.Add(2*time.Second)) {
			t.Fatalf("stored turn = %+v", got[0])
		}
		wantTexts(t, must(h.List(ctx, "telegram:1", store.HistoryQuery{Before: got[0].ID}))(t), "m0")
	})

	t.Run("SearchEveryTermNewestFirst", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		add := func(i int, terms ...string) {
			must(h.Append(ctx, turn("console:a", "console:a", fmt.Sprint("t", i), now.Add(time.Duration(i)*time.Second), terms...), 0, time.Time{}))(t)
		}
		add(0, "考试", "考", "试")
		add(1, "exam", "notice")
		add(2, "考试", "通知", "考", "试", "通", "知")
		add(3, "exam")
		add(4, "通知", "通", "知")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"考试"}, store.HistoryQuery{}))(t), "t2", "t0")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"考试", "通知"}, store.HistoryQuery{}))(t), "t2")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"exam"}, store.HistoryQuery{}))(t), "t3", "t1")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"exam", "考试"}, store.HistoryQuery{}))(t))
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"missing"}, store.HistoryQuery{}))(t))
		wantTexts(t, must(h.Search(ctx, "console:a", nil, store.HistoryQuery{}))(t))
		page := must(h.Search(ctx, "console:a", []string{"通"}, store.HistoryQuery{Limit: 1}))(t)
		wantTexts(t, page, "t4")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"通"}, store.HistoryQuery{Before: page[0].ID}))(t), "t2")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"考"}, store.HistoryQuery{Since: now.Add(time.Second)}))(t), "t2")
	})

	t.Run("KeepDropsOldestWithIndex", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		for i := range 5 {
			must(h.Append(ctx, turn("console:a", "console:a", fmt.Sprint("t", i), now.Add(time.Duration(i)*time.Second), "word", fmt.Sprint("w", i)), 3, time.Time{}))(t)
		}
		wantTexts(t, must(h.List(ctx, "console:a", store.HistoryQuery{}))(t), "t4", "t3", "t2")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"word"}, store.HistoryQuery{}))(t), "t4", "t3", "t2")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"w0"}, store.HistoryQuery{}))(t))
	})

	t.Run("RetentionCutOnAppendAndPrune", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		must(h.Append(ctx, turn("console:a", "console:a", "old", now.Add(-48*time.Hour), "x"), 0, time.Time{}))(t)
		must(h.Append(ctx, turn("console:b", "console:b", "old-b", now.Add(-47*time.Hour), "x"), 0, time.Time{}))(t)
		must(h.Append(ctx, turn("console:b", "console:b", "new-b", now.Add(-time.Hour), "x"), 0, time.Time{}))(t)
		oldest := must(h.Prune(ctx, now.Add(-100*time.Hour)))(t)
		if !oldest.Equal(now.Add(-48 * time.Hour)) {
			t.Fatalf("oldest = %v, want %v", oldest, now.Add(-48*time.Hour))
		}
		// An append cuts its own log at since.
		must(h.Append(ctx, turn("console:a", "console:a", "new", now, "x"), 0, now.Add(-24*time.Hour)))(t)
		wantTexts(t, must(h.List(ctx, "console:a", store.HistoryQuery{}))(t), "new")
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"x"}, store.HistoryQuery{}))(t), "new")
		// Reads hide what is past the cut-off even before a prune.
		wantTexts(t, must(h.List(ctx, "console:b", store.HistoryQuery{Since: now.Add(-24 * time.Hour)}))(t), "new-b")
		// Prune cuts every log and says when the next turn expires.
		oldest = must(h.Prune(ctx, now.Add(-24*time.Hour)))(t)
		if !oldest.Equal(now.Add(-time.Hour)) {
			t.Fatalf("oldest after prune = %v, want %v", oldest, now.Add(-time.Hour))
		}
		wantTexts(t, must(h.List(ctx, "console:b", store.HistoryQuery{}))(t), "new-b")
		wantTexts(t, must(h.Search(ctx, "console:b", []string{"x"}, store.HistoryQuery{}))(t), "new-b")
		must(h.Forget(ctx, "console:a", ""))(t)
		must(h.Forget(ctx, "console:b", ""))(t)
		if oldest := must(h.Prune(ctx, now))(t); !oldest.IsZero() {
			t.Fatalf("oldest with no history = %v", oldest)
		}
	})

	t.Run("ForgetLeavesNothing", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		for i := range 3 {
			must(h.Append(ctx, turn("console:a", "console:a", fmt.Sprint("a", i), now, "secret"), 0, time.Time{}))(t)
		}
		must(h.Append(ctx, turn("console:b", "console:b", "b", now, "secret"), 0, time.Time{}))(t)
		if n := must(h.Forget(ctx, "console:a", ""))(t); n != 3 {
			t.Fatalf("forgot %d, want 3", n)
		}
		wantTexts(t, must(h.List(ctx, "console:a", store.HistoryQuery{}))(t))
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"secret"}, store.HistoryQuery{}))(t))
		wantTexts(t, must(h.Search(ctx, "console:b", []string{"secret"}, store.HistoryQuery{}))(t), "b")
		if n := must(h.Forget(ctx, "console:a", ""))(t); n != 0 {
			t.Fatalf("second forget deleted %d", n)
		}
		// The log starts again, and old index entries find nothing of it.
		must(h.Append(ctx, turn("console:a", "console:a", "again", now, "fresh"), 0, time.Time{}))(t)
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"secret"}, store.HistoryQuery{}))(t))
		wantTexts(t, must(h.Search(ctx, "console:a", []string{"fresh"}, store.HistoryQuery{}))(t), "again")
	})

	t.Run("ForgetOnePrincipalInAGroup", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		const group = "telegram:chat:-100"
		for i, who := range []string{"telegram:1", "telegram:2", "telegram:1", "telegram:2"} {
			must(h.Append(ctx, turn(group, who, fmt.Sprint(who, "#", i), now.Add(time.Duration(i)*time.Second), "hi"), 0, time.Time{}))(t)
		}
		if n := must(h.Forget(ctx, group, "telegram:1"))(t); n != 2 {
			t.Fatalf("forgot %d, want 2", n)
		}
		wantTexts(t, must(h.Search(ctx, group, []string{"hi"}, store.HistoryQuery{}))(t), "telegram:2#3", "telegram:2#1")
		wantTexts(t, must(h.List(ctx, group, store.HistoryQuery{}))(t), "telegram:2#3", "telegram:2#1")
	})

	t.Run("ConcurrentAppendsAllKept", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		var wg sync.WaitGroup
		ids := make(chan string, 40)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					tr, err := h.Append(ctx, turn("console:a", "console:a", fmt.Sprint(w, "/", i), now, "all"), 0, time.Time{})
					if err != nil {
						t.Error(err)
						return
					}
					ids <- tr.ID
				}
			}()
		}
		wg.Wait()
		close(ids)
		seen := map[string]bool{}
		for id := range ids {
			if seen[id] {
				t.Fatalf("id %s given twice", id)
			}
			seen[id] = true
		}
		if got := must(h.Search(ctx, "console:a", []string{"all"}, store.HistoryQuery{Limit: 100}))(t); len(got) != 40 {
			t.Fatalf("found %d of 40", len(got))
		}
	})

	t.Run("ManyTurnsPagedIntersectTrimForget", func(t *testing.T) {
		s := open(t)
		h, now := s.History(), base()
		const n, keep = 300, 250
		for i := range n {
			terms := []string{"all"}
			if i%2 == 0 {
				terms = append(terms, "even")
			}
			if i%3 == 0 {
				terms = append(terms, "third")
			}
			who := "console:a"
			if i%5 == 0 {
				who = "console:b"
			}
			must(h.Append(ctx, turn("console:log", who, fmt.Sprint(i), now.Add(time.Duration(i)*time.Second), terms...), keep, time.Time{}))(t)
		}
		want := func(ok func(i int) bool) []string {
			var out []string
			for i := n - 1; i >= n-keep; i-- {
				if ok(i) {
					out = append(out, fmt.Sprint(i))
				}
			}
			return out
		}
		pages := func(terms ...string) []string {
			var out []string
			q := store.HistoryQuery{Limit: 7}
			for {
				page := must(h.Search(ctx, "console:log", terms, q))(t)
				out = append(out, texts(page)...)
				if len(page) < q.Limit {
					return out
				}
				q.Before = page[len(page)-1].ID
			}
		}
		if got, w := pages("even", "third"), want(func(i int) bool { return i%6 == 0 }); !slices.Equal(got, w) {
			t.Fatalf("even and third = %q, want %q", got, w)
		}
		if got := pages("all"); len(got) != keep {
			t.Fatalf("all = %d turns, want %d", len(got), keep)
		}
		if n := must(h.Forget(ctx, "console:log", "console:b"))(t); n != keep/5 {
			t.Fatalf("forgot %d of b's turns, want %d", n, keep/5)
		}
		if got, w := pages("third", "all"), want(func(i int) bool { return i%3 == 0 && i%5 != 0 }); !slices.Equal(got, w) {
			t.Fatalf("third after forget = %q, want %q", got, w)
		}
	})

	t.Run("BadCursor", func(t *testing.T) {
		s := open(t)
		must(s.History().Append(ctx, turn("console:a", "console:a", "x", base(), "x"), 0, time.Time{}))(t)
		_, err := s.History().List(ctx, "console:a", store.HistoryQuery{Before: "nope"})
		wantErr(t, err, store.ErrNotFound)
	})

	t.Run("SurvivesReopen", func(t *testing.T) {
		if reopen == nil {
			t.Skip("backend cannot reopen")
		}
		s := open(t)
		now := base()
		must(s.History().Append(ctx, turn("console:a", "console:a", "kept", now, "kept"), 0, time.Time{}))(t)
		s = reopen(t, s)
		wantTexts(t, must(s.History().Search(ctx, "console:a", []string{"kept"}, store.HistoryQuery{}))(t), "kept")
		next := must(s.History().Append(ctx, turn("console:a", "console:a", "next", now, "kept"), 0, time.Time{}))(t)
		wantTexts(t, must(s.History().Search(ctx, "console:a", []string{"kept"}, store.HistoryQuery{}))(t), "next", "kept")
		if next.ID <= must(s.History().List(ctx, "console:a", store.HistoryQuery{}))(t)[1].ID {
			t.Fatal("ids after reopen do not sort after the ones before")
		}
	})
}
