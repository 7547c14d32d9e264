package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI10_DownloadsOfAChatCourseSiteReadItsStoredToken: a course site
// whose token was given in chat has none in its task; its downloads ask
// the credential store for it, as its runs do, and fail as auth-less
// when it is gone.
func TestI10_DownloadsOfAChatCourseSiteReadItsStoredToken(t *testing.T) {
	ctx := context.Background()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.New(engine.Options{Store: st, Log: zerolog.Nop(), Holder: "a",
		Policy:  tasks.Policy{Admins: []string{"console:admin"}, Named: map[string]bool{}},
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) { return nil, nil })})
	if err != nil {
		t.Fatal(err)
	}
	m := eng.Catalog
	const site = "https://school.example.edu"
	if err := m.SetDeclared(ctx, []tasks.Declared{{ID: "cs101", Owner: "console:alice", Schedule: "every 1h", Notify: []string{"inbox:console:alice"},
		Source: watch.Spec{Kind: "canvas", URL: site, TokenFrom: "console:alice", Download: &watch.Download{Dir: "files"}}}}); err != nil {
		t.Fatal(err)
	}
	s := &service{store: st, manager: m}
	if _, err := s.downloadPlan(ctx, "cs101"); watch.ClassOf(err) != watch.Auth {
		t.Fatalf("plan without a stored token: %v, want an auth failure", err)
	}
	if err := credentials.New(st.Channels()).Put(ctx, "console:alice", site, "7~from-chat"); err != nil {
		t.Fatal(err)
	}
	plan, err := s.downloadPlan(ctx, "cs101")
	if err != nil || plan.Token != "7~from-chat" || plan.Dir != "files" {
		t.Fatalf("plan %+v (%v), want the stored token and the approved dir", plan.Dir, err)
	}
}
