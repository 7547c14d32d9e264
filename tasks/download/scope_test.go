package download_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/download/downloadtest"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI6_RevokedTokenIsOneAuthFailureTheOwnerHearsOnce: a revoked token
// ends each run at once, classified auth and shown on the task; the
// owner is told once; nothing is pushed or downloaded.
func TestI6_RevokedTokenIsOneAuthFailureTheOwnerHearsOnce(t *testing.T) {
	site := twoCourses(time.Now())
	defer site.Close()
	h := start(t, canvasSpec(site, "files"), tasks.Policy{})
	h.settled()
	before := site.TotalHits()
	site.Revoke(true)
	site.Change(func(cs *[]downloadtest.Course, _ *[]downloadtest.Announcement) {
		(*cs)[1].Files = append((*cs)[1].Files, downloadtest.File{ID: 9, Name: "new.pdf", Modified: time.Now(), Body: []byte("x")})
	})
	for range 3 {
		if rec := h.run(); rec.Class != watch.Auth || rec.Attempts != 1 || rec.Downloads != 0 {
			t.Fatalf("run = %+v, want one attempt classified auth", rec)
		}
	}
	tk, err := h.m.Get(context.Background(), taskID)
	if err != nil || tk.LastError != string(watch.Auth) || tk.Failures != 3 {
		t.Fatalf("task shows error %q after %d failures (%v), want auth", tk.LastError, tk.Failures, err)
	}
	if got := h.say(owner, "/task "+taskID); !strings.Contains(got, "Failing 3 time(s) in a row") || strings.Contains(got, downloadtest.Token) {
		t.Fatalf("/task = %q, want the auth failure shown, never the token", got)
	}
	notices, _ := h.effects()
	if len(notices) != 0 || site.TotalHits() != before {
		t.Fatalf("%d pushes and %d downloads while the token is revoked", len(notices), site.TotalHits()-before)
	}
	fxs, _ := h.st.Ledger().List(context.Background(), taskID, 0)
	failing := 0
	for _, fx := range fxs {
		if strings.Contains(string(fx.Payload), "Watch failing") {
			failing++
		}
	}
	if failing != 1 {
		t.Fatalf("the owner was told %d times, want once", failing)
	}
}

// TestI8_DownloadsStayInScope: a redirect to a host outside the scope is
// never followed, a sign-in page where a file was expected is refused,
// names from the site never write outside the task's directory, and two
// files of one name do not overwrite each other.
func TestI8_DownloadsStayInScope(t *testing.T) {
	mod := time.Now().Add(-time.Hour)
	files := []downloadtest.File{
		{ID: 1, Name: "../../x", Modified: mod, Body: downloadtest.Body(1, 1, 100)},
		{ID: 2, Name: "con", Modified: mod, Body: downloadtest.Body(2, 1, 200)},
		{ID: 3, Name: "a/b", Modified: mod, Body: downloadtest.Body(3, 1, 300)},
		{ID: 4, Name: "elsewhere.pdf", Modified: mod, Body: downloadtest.Body(4, 1, 400), Redirect: "outside"},
		{ID: 5, Name: "slides.pdf", Modified: mod, Body: downloadtest.Body(5, 1, 500), Redirect: "login"},
		{ID: 6, Name: "..", Modified: mod, Body: downloadtest.Body(6, 1, 600)},
		{ID: 7, Name: "notes.pdf", Modified: mod, Body: downloadtest.Body(7, 1, 700)},
		{ID: 8, Name: "NOTES.pdf", Modified: mod, Body: downloadtest.Body(8, 1, 800)}, // another folder, the same name
	}
	site := downloadtest.NewCanvas([]downloadtest.Course{{ID: 1, Name: "../Hacks", Files: files}}, nil, 100)
	defer site.Close()
	if site.Outside == nil {
		t.Skip("no second loopback address for an out-of-scope host")
	}
	h := start(t, canvasSpec(site, "keep"), tasks.Policy{})
	outcome := map[string]store.Effect{}
	for _, fx := range h.settled() {
		outcome[fx.Error] = fx
	}
	if fx, ok := outcome["redirect_out_of_scope"]; !ok || fx.State != store.Failed || site.OutsideHits() != 0 {
		t.Fatalf("out-of-scope redirect: %+v, %d requests reached that host", outcome, site.OutsideHits())
	}
	if fx, ok := outcome["html_not_file"]; !ok || fx.State != store.Failed {
		t.Fatalf("a sign-in page in place of a file: outcomes %v", outcome)
	}
	dir := h.kept("keep")
	wantNames := map[string]int{"__Hacks/____x": 100, "__Hacks/_con": 200, "__Hacks/a_b": 300, "__Hacks/_": 600,
		"__Hacks/notes (7).pdf": 700, "__Hacks/NOTES (8).pdf": 800}
	var got []string
	filepath.WalkDir(h.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || strings.HasPrefix(d.Name(), "herald.db") {
			if d != nil && d.IsDir() {
				return filepath.SkipDir // the store's own files
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if !filepath.IsLocal(rel) {
			t.Errorf("%s was written outside the task's directory", p)
		}
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	if len(got) != len(wantNames) {
		t.Fatalf("files kept: %v, want %v", got, wantNames)
	}
	for name, size := range wantNames {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || len(b) != size {
			t.Fatalf("%s: %d bytes (%v), want %d", name, len(b), err, size)
		}
	}
	if site.Leaks() != 0 {
		t.Fatalf("%d storage requests carried the token", site.Leaks())
	}
}

// TestI8_AbsoluteDirUnderAPolicyRoot: a task may keep its files under a
// root the policy lists; the approval binds that directory.
func TestI8_AbsoluteDirUnderAPolicyRoot(t *testing.T) {
	site := twoCourses(time.Now())
	defer site.Close()
	root := t.TempDir()
	dir := filepath.Join(root, "school", "cs101")
	h := start(t, canvasSpec(site, dir), tasks.Policy{DownloadRoots: []string{root}})
	h.settled()
	tk, _ := h.m.Get(context.Background(), taskID)
	if tk.Grant == nil || tk.Grant.Dir != dir {
		t.Fatalf("grant %+v does not name the download dir %s", tk.Grant, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "Physics", "lab.pdf")); err != nil || !bytes.Equal(b, downloadtest.Body(6, 1, 9000)) {
		t.Fatalf("file under the policy root: %v", err)
	}
}

// TestI7_DownloadsBeyondMaxPerRunWaitForTheNextRun: at most max_per_run
// downloads are claimed per run; the rest follow, never dropped.
func TestI7_DownloadsBeyondMaxPerRunWaitForTheNextRun(t *testing.T) {
	site := twoCourses(time.Now())
	defer site.Close()
	spec := canvasSpec(site, "files")
	spec.Download.MaxPerRun = 4
	h := start(t, spec, tasks.Policy{})
	runs, _ := h.m.Runs(context.Background(), taskID, 0)
	if runs[0].Downloads != 4 || runs[0].Deferred != 2 {
		t.Fatalf("baseline = %+v, want 4 downloads and 2 deferred", runs[0])
	}
	if rec := h.run(); rec.Downloads != 2 || rec.Deferred != 0 {
		t.Fatalf("next run = %+v, want the 2 left", rec)
	}
	if fxs := h.settled(); len(fxs) != 6 || site.TotalHits() != 6 {
		t.Fatalf("%d downloads, %d fetches, want 6 each", len(fxs), site.TotalHits())
	}
}

// TestI3_FailedDownloadIsRetried: a download crosses no outside
// boundary, so one whose storage answers 503 is tried again and completes,
// and a metadata read the site throttles is too.
func TestI3_FailedDownloadIsRetried(t *testing.T) {
	site := twoCourses(time.Now())
	defer site.Close()
	site.Unavailable(6, 1)
	h := start(t, canvasSpec(site, "files"), tasks.Policy{})
	retried := 0
	for _, fx := range h.settled() {
		if fx.State != store.Completed {
			t.Fatalf("download ended %s (%s)", fx.State, fx.Error)
		}
		for _, a := range fx.Attempts {
			if a.Error == "http_503" {
				retried++
			}
		}
	}
	if retried != 1 || site.Hits(6) != 2 {
		t.Fatalf("%d downloads retried, file 6 fetched %d times; want one retry", retried, site.Hits(6))
	}
	if b := readFile(t, h.kept("files/Physics/lab.pdf")); !bytes.Equal(b, downloadtest.Body(6, 1, 9000)) {
		t.Fatal("the retried file is not exact")
	}
}

// TestI7_OneDownloadAtATimePerSiteAndToken: a course of many files is
// fetched one body at a time, and every file still arrives.
func TestI7_OneDownloadAtATimePerSiteAndToken(t *testing.T) {
	site := bigCourse(24)
	defer site.Close()
	site.Slow(time.Millisecond)
	h := start(t, watch.Spec{Kind: "canvas", URL: site.Site.URL, Token: downloadtest.Token, Watch: []string{"files"},
		Download: &watch.Download{Dir: "files"}}, tasks.Policy{})
	for _, fx := range h.settled() {
		if fx.State != store.Completed {
			t.Fatalf("download ended %s (%s)", fx.State, fx.Error)
		}
	}
	if site.TotalHits() != 24 || site.MostAtOnce() != 1 {
		t.Fatalf("%d bodies fetched, at most %d at once; want 24, one at a time", site.TotalHits(), site.MostAtOnce())
	}
}

// TestI8_DeletedTaskDownloadsNothingMore: once a task is deleted, its
// downloads still waiting end failed and write nothing.
func TestI8_DeletedTaskDownloadsNothingMore(t *testing.T) {
	site := bigCourse(12)
	defer site.Close()
	site.Slow(20 * time.Millisecond)
	h := start(t, watch.Spec{Kind: "canvas", URL: site.Site.URL, Token: downloadtest.Token, Watch: []string{"files"},
		Download: &watch.Download{Dir: "files"}}, tasks.Policy{})
	if _, err := h.m.Delete(context.Background(), "", taskID); err != nil {
		t.Fatal(err)
	}
	gone := 0
	for _, fx := range h.settled() {
		var m delivery.Message
		_ = json.Unmarshal(fx.Payload, &m)
		f, _ := download.FileOf(m)
		_, err := os.Stat(h.kept(filepath.Join("files", "Big", f.Name)))
		switch {
		case fx.State == store.Failed && fx.Error == "task_gone":
			gone++
			if err == nil {
				t.Fatalf("%s was written after its task was deleted", f.Name)
			}
		case fx.State != store.Completed:
			t.Fatalf("download of %s ended %s (%s)", f.Name, fx.State, fx.Error)
		}
	}
	if gone == 0 {
		t.Fatal("every download finished before the delete: nothing was left to stop")
	}
}
