package conversation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/watch"
)

// keep records in the ledger that task kept f, as the download sink does.
func (r *rig) keep(taskID string, f watch.File, written string) {
	r.t.Helper()
	ctx := context.Background()
	msg, err := download.Message(taskID, taskID, &f, r.clock.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	payload, _ := json.Marshal(msg)
	key := delivery.EffectKey(taskID, download.Identity(&f), download.Recipient(taskID))
	now := r.clock.Now()
	if _, err := r.store.Ledger().Commit(ctx, store.RunCommit{TaskID: taskID, Effects: []store.Effect{{Key: key, TaskID: taskID,
		Recipient: download.Recipient(taskID), Kind: download.Kind, Payload: payload, State: store.Pending, NotBefore: now, CreatedAt: now, UpdatedAt: now}}}); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.store.Ledger().Begin(ctx, key, "w", 0, now); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.store.Ledger().Settle(ctx, key, store.Outcome{State: store.Completed, ProviderID: written}, now); err != nil {
		r.t.Fatal(err)
	}
}

func TestDownloadsListsTheFilesATaskKeepsToItsOwnerOnly(t *testing.T) {
	r := newRig(t, defaultPolicy())
	tk := r.submit(alice, "https://school.example.edu/feed.xml")
	if got := r.say(alice, "/downloads "+tk.ID); !strings.Contains(got, "No course files kept") {
		t.Fatalf("no files yet: %q", got)
	}
	r.keep(tk.ID, watch.File{ID: "1", Name: "week1.pdf", Course: "Algebra", Size: 2048, Modified: "m1"}, "Algebra/week1.pdf")
	got := r.say(alice, "/downloads "+tk.ID)
	for _, w := range []string{"Algebra/week1.pdf", "2.0 KiB", "Algebra", "2026-11-02 09:00"} {
		if !strings.Contains(got, w) {
			t.Fatalf("/downloads = %q, want it to show %q", got, w)
		}
	}
	if got := r.sayZh(alice, "/下载 "+tk.ID); !strings.Contains(got, "week1.pdf") || !strings.Contains(got, "，Algebra") {
		t.Fatalf("/下载 = %q", got)
	}
	if got := r.say(bob, "/downloads "+tk.ID); strings.Contains(got, "week1.pdf") {
		t.Fatalf("another requester saw the files: %q", got)
	}
	if got := r.say(alice, "/downloads"); !strings.Contains(got, "/downloads <task-id>") {
		t.Fatalf("/downloads without an id: %q", got)
	}
}
