package tasks

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI8_ApprovalBindsTheDownloadDirAndResumeRechecksIt: the grant names
// the directory; a task whose directory moved, or whose root the policy
// no longer lists, is refused on resume and gets no download plan.
func TestI8_ApprovalBindsTheDownloadDirAndResumeRechecksIt(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "cs101")
	p := r.m.Policy()
	p.DownloadRoots = []string{root}
	r.m.SetPolicy(p)
	if err := r.m.SetDeclared(ctx, []Declared{{ID: "cs101", Owner: "console:alice", Schedule: "every 1h",
		Notify: []string{"inbox:console:alice"},
		Source: watch.Spec{Kind: "canvas", URL: "https://school.example.edu", Token: "t", Download: &watch.Download{Dir: dir}}}}); err != nil {
		t.Fatal(err)
	}
	tk, err := r.m.Get(ctx, "cs101")
	if err != nil || tk.Grant == nil || tk.Grant.Dir != dir {
		t.Fatalf("grant %+v (%v), want it to name %s", tk.Grant, err, dir)
	}
	plan, err := r.m.DownloadPlan(ctx, "cs101")
	if err != nil || plan.Dir != dir || plan.Token != "t" || len(plan.Hosts) == 0 {
		t.Fatalf("plan %+v (%v)", plan, err)
	}
	if _, err := r.m.Pause(ctx, "", "cs101"); err != nil {
		t.Fatal(err)
	}
	// The directory moves without a new approval.
	if _, err := r.m.Update(ctx, "cs101", func(cur *Task) error {
		cur.Source.Download = &watch.Download{Dir: filepath.Join(root, "elsewhere")}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Resume(ctx, "", "cs101"); !errors.Is(err, ErrScope) {
		t.Fatalf("resume with a moved download dir: %v, want a scope refusal", err)
	}
	if _, err := r.m.DownloadPlan(ctx, "cs101"); !errors.Is(err, download.ErrScope) {
		t.Fatalf("plan with a moved download dir: %v, want ErrScope", err)
	}
	// Back in place, but the policy no longer lists the root.
	if _, err := r.m.Update(ctx, "cs101", func(cur *Task) error {
		cur.Source.Download = &watch.Download{Dir: dir}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p.DownloadRoots = nil
	r.m.SetPolicy(p)
	if _, err := r.m.Resume(ctx, "", "cs101"); !errors.Is(err, ErrScope) {
		t.Fatalf("resume after the root left the policy: %v, want a scope refusal", err)
	}
	if _, err := r.m.Delete(ctx, "", "cs101"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.DownloadPlan(ctx, "cs101"); !errors.Is(err, download.ErrGone) {
		t.Fatalf("plan of a deleted task: %v, want ErrGone", err)
	}
	// A new task whose dir no root allows is never approved.
	if err := r.m.SetDeclared(ctx, []Declared{{ID: "cs202", Owner: "console:alice", Schedule: "every 1h",
		Notify: []string{"inbox:console:alice"},
		Source: watch.Spec{Kind: "canvas", URL: "https://school.example.edu", Token: "t", Download: &watch.Download{Dir: "/etc"}}}}); !errors.Is(err, ErrScope) {
		t.Fatalf("approving a download dir outside every root: %v, want a scope refusal", err)
	}
}
