package runner_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// miniCanvas is a small course site on loopback speaking Canvas's wire
// format (Bearer token, while(1); prefix, Link pagination, 401 bodies).
type miniCanvas struct {
	mu      sync.Mutex
	files   int
	revoked bool
}

func (c *miniCanvas) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.revoked || r.Header.Get("Authorization") != "Bearer good" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="canvas-lms"`)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"message":"Invalid access token."}]}`)
		return
	}
	var rows []string
	switch r.URL.Path {
	case "/api/v1/courses":
		rows = []string{`{"id":1,"name":"Algebra"}`}
	case "/api/v1/courses/1/assignments":
		rows = []string{`{"id":11,"name":"Homework","due_at":"2026-11-02T20:00:00Z","submission":{"workflow_state":"unsubmitted"}}`}
	case "/api/v1/announcements":
		rows = []string{}
	case "/api/v1/courses/1/files":
		for i := range c.files {
			rows = append(rows, fmt.Sprintf(`{"id":%d,"display_name":"f%d.pdf","size":10,"modified_at":"2026-10-01T00:00:00Z"}`, i, i))
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		return
	}
	fmt.Fprint(w, "while(1);["+strings.Join(rows, ",")+"]")
}

// canvasRig is a manager whose task reads a canvas site on loopback.
func canvasRig(t *testing.T, site *miniCanvas) (*rig, *tasks.Task) {
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	r := newRig(t)
	r.setSources(tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
		return source.New(watch.Spec{Kind: "canvas", URL: srv.URL, Token: "good"}, source.Options{AllowPrivate: true})
	}))
	r.setRetryWaits([]time.Duration{0, 0})
	r.own()
	return r, r.activeTask()
}

func TestI1_CanvasBaselineQuietThenOneNoticePerNewFile(t *testing.T) {
	site := &miniCanvas{files: 3}
	r, tk := canvasRig(t, site)
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeBaseline || rec.Items != 4 {
		t.Fatalf("baseline run = %+v", rec)
	}
	if fx, _ := r.effects(tk.ID); len(fx) != 0 {
		t.Fatalf("the baseline pushed %d items", len(fx))
	}
	r.run(tk.ID)
	site.mu.Lock()
	site.files = 4
	site.mu.Unlock()
	r.run(tk.ID)
	r.run(tk.ID)
	if fx, _ := r.effects(tk.ID); len(fx) != 1 {
		t.Fatalf("a new file gave %d item effects, want 1", len(fx))
	}
}

func TestI6_CanvasRevokedTokenTellsTheOwnerOnce(t *testing.T) {
	site := &miniCanvas{files: 1}
	r, tk := canvasRig(t, site)
	r.run(tk.ID)
	site.mu.Lock()
	site.revoked = true
	site.mu.Unlock()
	for range 3 {
		rec := r.run(tk.ID)
		if rec.Class != watch.Auth || rec.Attempts != 1 {
			t.Fatalf("run = %+v, want one attempt classified auth", rec)
		}
	}
	got, err := r.m.Get(context.Background(), tk.ID)
	if err != nil || got.LastError != string(watch.Auth) {
		t.Fatalf("task last error %q (%v), want auth", got.LastError, err)
	}
	fx, notices := r.effects(tk.ID)
	if len(fx) != 0 {
		t.Fatalf("%d pushes while the token is revoked", len(fx))
	}
	failing := 0
	for _, n := range notices {
		if decodeMsg(t, n).Title == "Watch failing" {
			failing++
		}
	}
	if failing != 1 {
		t.Fatalf("owner told %d times, want once", failing)
	}
}

func TestI1_CanvasAssignmentDueSoonRemindsOnceFromTheBaseline(t *testing.T) {
	site := &miniCanvas{files: 1}
	r, tk := canvasRig(t, site)
	// The homework is due at 20:00, eleven hours after the rig's clock.
	if _, err := r.m.Update(context.Background(), tk.ID, func(cur *tasks.Task) error {
		cur.RemindBefore = []time.Duration{72 * time.Hour, 24 * time.Hour, 2 * time.Hour}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.run(tk.ID)
	r.run(tk.ID)
	fx, _ := r.effects(tk.ID)
	if len(fx) != 1 || !strings.Contains(fmt.Sprintf("%+v", decodeMsg(t, fx[0])), "Homework") {
		t.Fatalf("%d effects, want one reminder of the homework (the 24h offset)", len(fx))
	}
}
