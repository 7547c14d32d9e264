package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/tasks/watch"
)

// refusal returns the English and Chinese texts of an ErrLimit refusal.
func refusal(t *testing.T, err error) (en, zh string) {
	t.Helper()
	var ue *UserError
	if !errors.Is(err, ErrLimit) || !errors.As(err, &ue) {
		t.Fatalf("got %v, want an ErrLimit refusal", err)
	}
	zh, _ = text.Error("zh", err)
	return ue.Msg, zh
}

// One principal's tasks stop at max_tasks_per_owner while others may still
// ask; the refusal names that bound with both numbers, in English and
// Chinese; a deleted task frees its place; config-declared tasks do not
// count toward their owner's own bound (I7). On both stores.
func TestI7_PerOwnerBound(t *testing.T) {
	onEachStore(t, 100, func(t *testing.T, m *Manager) {
		p := m.Policy()
		p.Limits.MaxTasksPerOwner = 2
		m.SetPolicy(p)
		ctx := context.Background()
		if err := m.SetDeclared(ctx, []Declared{declaredFor("console:alice", 0), declaredFor("console:alice", 1), declaredFor("console:alice", 2)}); err != nil {
			t.Fatal(err)
		}
		first, err := m.Submit(ctx, request("console:alice"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Submit(ctx, request("console:alice")); err != nil {
			t.Fatalf("second task of two allowed (three config tasks of the same owner must not count): %v", err)
		}
		_, err = m.Submit(ctx, request("console:alice"))
		en, zh := refusal(t, err)
		if !strings.Contains(en, "limit for one person: 2 of 2") || !strings.Contains(zh, "每人上限：2 / 2 个") {
			t.Fatalf("refusal does not say the per-owner bound and numbers: %q / %q", en, zh)
		}
		if _, err := m.Submit(ctx, request("console:bob")); err != nil {
			t.Fatalf("another person refused by alice's bound: %v", err)
		}
		if _, err := m.Delete(ctx, "console:alice", first.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Submit(ctx, request("console:alice")); err != nil {
			t.Fatalf("a deleted task still counted: %v", err)
		}
	})
}

// Every live task counts toward max_tasks, config-declared ones included;
// the refusal says the total and the bound (I7). On both stores.
func TestI7_TotalBoundCountsDeclaredTasks(t *testing.T) {
	const limit = 4
	onEachStore(t, limit, func(t *testing.T, m *Manager) {
		ctx := context.Background()
		if err := m.SetDeclared(ctx, []Declared{declaredFor("console:admin", 0), declaredFor("console:admin", 1), declaredFor("console:admin", 2)}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Submit(ctx, request("console:alice")); err != nil {
			t.Fatalf("the fourth task of four: %v", err)
		}
		_, err := m.Submit(ctx, request("console:bob"))
		en, zh := refusal(t, err)
		if !strings.Contains(en, "limit in all: 4 of 4") || !strings.Contains(zh, "总数已达上限：4 / 4 个") {
			t.Fatalf("refusal does not say the total bound and numbers: %q / %q", en, zh)
		}
		if n, err := liveTasks(ctx, m); err != nil || n != limit {
			t.Fatalf("%d live tasks (%v), bound %d", n, err, limit)
		}
		// Fewer declared tasks free places for chat tasks.
		if err := m.SetDeclared(ctx, []Declared{declaredFor("console:admin", 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Submit(ctx, request("console:bob")); err != nil {
			t.Fatalf("after two config tasks went: %v", err)
		}
	})
}

// onEachStore runs fn with a manager (task bound maxTasks) on each store.
func onEachStore(t *testing.T, maxTasks int, fn func(t *testing.T, m *Manager)) {
	for _, b := range sharedBackends() {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t, time.Now)
			fn(t, replica(t, st, "replica-a", nil, maxTasks))
		})
	}
}

func declaredFor(owner string, i int) Declared {
	return Declared{ID: fmt.Sprintf("decl-%d", i), Source: watch.Spec{Kind: "rss", URL: fmt.Sprintf("https://news.example.edu/%d.xml", i)},
		Schedule: "every 1h", Notify: []string{"inbox:" + owner}, Owner: owner}
}
