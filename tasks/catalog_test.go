package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/watch"
)

func TestI8_ResumeAfterPolicyNarrowedIsRefused(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// A host outside the allowed list waits for an admin.
	other, err := r.m.Submit(ctx, Submission{Principal: "console:alice", URL: "https://example.org/feed.xml", Schedule: "every 1h"})
	if err != nil {
		t.Fatal(err)
	}
	if other.State != PendingApproval {
		t.Fatalf("state %s, want pending approval", other.State)
	}
	if _, err := r.m.Approve(ctx, "console:alice", other.Request.ID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a non-admin approved: %v", err)
	}
	// A host in the allowed list needs no admin; its grant rests on the list.
	tk, err := r.m.Submit(ctx, Submission{Principal: "console:alice", URL: "https://news.example.edu/feed.xml", Schedule: "every 1h"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != Active || tk.Grant.Basis != "allowed_hosts" {
		t.Fatalf("state %s basis %+v, want active on allowed_hosts", tk.State, tk.Grant)
	}
	if _, err := r.m.Pause(ctx, "console:alice", tk.ID); err != nil {
		t.Fatal(err)
	}
	p := r.m.Policy()
	p.AllowedHosts = []string{"*.other.edu"}
	r.m.SetPolicy(p)
	_, err = r.m.Resume(ctx, "console:alice", tk.ID)
	if !errors.Is(err, ErrScope) || !strings.Contains(err.Error(), "news.example.edu") {
		t.Fatalf("resume after narrowing: %v, want a scope refusal naming the host", err)
	}
	if got, _ := r.m.Get(ctx, tk.ID); got.State != Paused {
		t.Fatalf("state %s after refused resume", got.State)
	}
}

func TestI8_ChatRequestMayTargetOnlyItsChatOrInbox(t *testing.T) {
	r := newRig(t)
	_, err := r.m.Submit(context.Background(), Submission{Principal: "telegram:42", ReplyTo: "telegram:chat:42",
		URL: "https://news.example.edu/feed.xml", Notify: []string{"telegram:chat:-100999"}})
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("targeting another chat: %v, want forbidden", err)
	}
}

func TestConfigDeclaredTasksFollowTheFile(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	decl := Declared{ID: "campus-news", Name: "Campus news", Source: watch.Spec{Kind: "rss", URL: "https://news.example.edu/feed.xml"},
		Schedule: "every 30m", Notify: []string{"inbox:console:admin"}, Owner: "console:admin"}
	if err := r.m.SetDeclared(ctx, []Declared{decl}); err != nil {
		t.Fatal(err)
	}
	tk, err := r.m.Get(ctx, "campus-news")
	if err != nil || tk.State != Active || tk.Grant == nil || tk.Grant.Basis != "config" {
		t.Fatalf("declared task not active with a config grant: %+v %v", tk, err)
	}
	rev := tk.Revision
	if err := r.m.SetDeclared(ctx, []Declared{decl}); err != nil {
		t.Fatal(err)
	}
	if tk, _ = r.m.Get(ctx, "campus-news"); tk.Revision != rev {
		t.Fatal("re-applying the same file bumped the revision")
	}
	decl.Schedule = "every 1h"
	_ = r.m.SetDeclared(ctx, []Declared{decl})
	if tk, _ = r.m.Get(ctx, "campus-news"); tk.Revision <= rev || tk.Schedule != "every 1h" {
		t.Fatalf("edit not applied: rev %d→%d schedule %q", rev, tk.Revision, tk.Schedule)
	}
	_ = r.m.SetDeclared(ctx, nil)
	if tk, _ = r.m.Get(ctx, "campus-news"); tk.State != Deleted {
		t.Fatalf("removed from the file but state %s", tk.State)
	}
}

func TestRequestIDOfADeclaredTaskNamesIt(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	decl := Declared{ID: "campus-news", Source: watch.Spec{Kind: "rss", URL: "https://news.example.edu/feed.xml"},
		Schedule: "every 1h", Notify: []string{"inbox:console:admin"}, Owner: "console:admin"}
	if err := r.m.SetDeclared(ctx, []Declared{decl}); err != nil {
		t.Fatal(err)
	}
	tk, err := r.m.Get(ctx, "r-campus-news")
	if err != nil || tk.ID != "campus-news" {
		t.Fatalf("r-campus-news → %v, %v", tk, err)
	}
	if _, err := r.m.Get(ctx, "r-nope"); err == nil || !strings.Contains(err.Error(), "r-nope") {
		t.Fatalf("unknown request: %v, want a message naming r-nope", err)
	}
}

// Requests arriving together cannot push herald past its task limit (I7).
func TestI7_ConcurrentRequestsRespectTaskLimit(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	p := r.m.Policy()
	p.Limits.MaxTasks = 3
	r.m.SetPolicy(p)
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.m.Submit(ctx, Submission{Principal: "console:alice", URL: "https://news.example.edu/feed.xml"})
		}()
	}
	wg.Wait()
	if n, _ := liveTasks(ctx, r.m); n != 3 {
		t.Fatalf("%d live tasks, limit 3", n)
	}
}

// A file of many tasks is written in a few transactions, not one disk
// sync per task (I7: the cost of a start does not grow with each task's sync).
func TestI7_DeclaredTasksAreWrittenInBatches(t *testing.T) {
	r := newRig(t)
	const n = 3000
	before := r.store.CommitStats().Transactions
	if err := r.m.SetDeclared(context.Background(), manyDeclared(n, "")); err != nil {
		t.Fatal(err)
	}
	if tx := r.store.CommitStats().Transactions - before; tx > 2 {
		t.Fatalf("%d declared tasks took %d write transactions, want 1 (one batch)", n, tx)
	}
	if live, err := liveTasks(context.Background(), r.m); err != nil || live != n {
		t.Fatalf("%d live tasks (%v), want %d", live, err, n)
	}
}

// manyDeclared declares n rss tasks, each on its own host unless host is set.
func manyDeclared(n int, host string) []Declared {
	out := make([]Declared, n)
	for i := range out {
		h := host
		if h == "" {
			h = fmt.Sprintf("h%d.example.edu", i)
		}
		out[i] = Declared{ID: fmt.Sprintf("bulk-%05d", i), Source: watch.Spec{Kind: "rss", URL: "https://" + h + "/feed.xml"},
			Schedule: "every 1h", Notify: []string{"inbox:console:admin"}, Owner: "console:admin"}
	}
	return out
}

// A chat command's schedule reaches the catalog parsed: Submit keeps it
// as it is rather than reading the text again.
func TestSubmitKeepsTheParsedSchedule(t *testing.T) {
	r := newRig(t)
	zone, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip(err)
	}
	parsed, err := schedule.Parse("daily 08:00", zone)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := r.m.Submit(context.Background(), Submission{Principal: "console:admin",
		URL: "https://news.example.edu/feed.xml", Parsed: parsed})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Schedule != parsed.String() {
		t.Fatalf("schedule %q, want the parsed %q", tk.Schedule, parsed.String())
	}
}
