package download_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/download/downloadtest"
	"github.com/herald-bridge/herald/tasks/watch"
)

// twoCourses is a site with two courses (and one restricted by date),
// five files in the first (three pages of two), one in the second, two
// assignments (one due within the first offset) and an announcement.
func twoCourses(now time.Time) *downloadtest.Site {
	mod := now.Add(-48 * time.Hour).Truncate(time.Second)
	var algebra []downloadtest.File
	for id := 1; id <= 5; id++ {
		algebra = append(algebra, downloadtest.File{ID: id, Name: "week" + string(rune('0'+id)) + ".pdf", Modified: mod, Body: downloadtest.Body(id, 1, 3000+id*500)})
	}
	return downloadtest.NewCanvas([]downloadtest.Course{
		{ID: 10, Name: "Algebra", Files: algebra, Assignments: []downloadtest.Assignment{
			{ID: 101, Name: "Homework 1", Due: now.Add(20 * time.Hour)},
			{ID: 102, Name: "Project", Due: now.Add(10 * 24 * time.Hour)},
		}},
		{ID: 20, Name: "Physics", Files: []downloadtest.File{{ID: 6, Name: "lab.pdf", Modified: mod, Body: downloadtest.Body(6, 1, 9000)}}},
		{ID: 30, Restricted: true},
	}, []downloadtest.Announcement{{ID: 201, CourseID: 10, Title: "Welcome", Message: "Hello"}}, 2)
}

func canvasSpec(site *downloadtest.Site, dir string) watch.Spec {
	return watch.Spec{Kind: "canvas", URL: site.Site.URL, Token: downloadtest.Token, Download: &watch.Download{Dir: dir}}
}

// TestI1_CourseSiteBaselineDownloadsQuietlyThenOneNoticeAndDownloadPerChange
// is the course-site contract end to end: the baseline pushes no item but
// the one reminder due within the first offset and keeps every file with
// its exact bytes; an unchanged run fetches nothing again; a new
// assignment, announcement and file and a changed file are one notice
// each and exactly two downloads.
// It runs on the embedded store and on Redis.
func TestI1_CourseSiteBaselineDownloadsQuietlyThenOneNoticeAndDownloadPerChange(t *testing.T) {
	for _, b := range []struct {
		name string
		open backend
	}{{"bolt", onBolt}, {"redis", onRedis}} {
		t.Run(b.name, func(t *testing.T) { courseSiteContract(t, b.open) })
	}
}

func courseSiteContract(t *testing.T, open backend) {
	now := time.Now()
	site := twoCourses(now)
	defer site.Close()
	h := startOn(t, open, canvasSpec(site, "files"), tasks.Policy{}, 72*time.Hour, 24*time.Hour, 2*time.Hour)

	runs, _ := h.m.Runs(context.Background(), taskID, 0)
	if runs[0].Outcome != tasks.OutcomeBaseline || runs[0].Items != 9 || runs[0].Downloads != 6 {
		t.Fatalf("baseline run = %+v, want baseline of 9 items claiming 6 downloads", runs[0])
	}
	notices, _ := h.effects()
	if got := itemTitles(t, notices); len(notices) != 1 || got["deadline Algebra: Homework 1"] != 1 {
		t.Fatalf("baseline pushed %v, want only the reminder of the homework due in 20h", got)
	}
	for _, fx := range h.settled() {
		if fx.State != store.Completed {
			t.Fatalf("download %s ended %s (%s)", fx.Key, fx.State, fx.Error)
		}
	}
	want := map[string][]byte{}
	site.Change(func(cs *[]downloadtest.Course, _ *[]downloadtest.Announcement) {
		for _, c := range *cs {
			for _, f := range c.Files {
				want[c.Name+"/"+f.Name] = f.Body
			}
		}
	})
	for name, body := range want {
		if got := readFile(t, h.kept("files/"+name)); !bytes.Equal(got, body) {
			t.Fatalf("%s: %d bytes kept, want the site's %d exactly", name, len(got), len(body))
		}
	}
	if site.TotalHits() != 6 || site.Leaks() != 0 {
		t.Fatalf("storage served %d bodies (%d with Authorization), want 6 and none", site.TotalHits(), site.Leaks())
	}

	if rec := h.run(); rec.Outcome != tasks.OutcomeUnchanged || rec.Downloads != 0 {
		t.Fatalf("unchanged run = %+v", rec)
	}
	h.settled()
	if site.TotalHits() != 6 {
		t.Fatalf("an unchanged run fetched %d files again", site.TotalHits()-6)
	}

	later := now.Truncate(time.Second)
	site.Change(func(cs *[]downloadtest.Course, an *[]downloadtest.Announcement) {
		algebra, physics := &(*cs)[0], &(*cs)[1]
		algebra.Assignments = append(algebra.Assignments, downloadtest.Assignment{ID: 103, Name: "Quiz", Due: now.Add(9 * 24 * time.Hour)})
		algebra.Files[2].Modified, algebra.Files[2].Body = later, downloadtest.Body(3, 2, 7777)
		physics.Files = append(physics.Files, downloadtest.File{ID: 7, Name: "errata.pdf", Modified: later, Body: downloadtest.Body(7, 1, 1234)})
		*an = append(*an, downloadtest.Announcement{ID: 202, CourseID: 20, Title: "Lab moved", Message: "Room 4"})
	})
	if rec := h.run(); rec.Downloads != 2 || rec.New != 3 || rec.Changed != 1 {
		t.Fatalf("run after changes = %+v, want 3 new, 1 changed, 2 downloads", rec)
	}
	h.settled()
	notices, _ = h.effects()
	got := itemTitles(t, notices)
	for _, w := range []string{"new Algebra: Quiz", "new Physics: Lab moved", "new Physics: errata.pdf", "changed Algebra: week3.pdf"} {
		if got[w] != 1 {
			t.Fatalf("notices %v: want exactly one %q", got, w)
		}
	}
	if len(notices) != 5 {
		t.Fatalf("%d item notices in all, want the reminder and four changes", len(notices))
	}
	if site.TotalHits() != 8 || site.Hits(3) != 2 || site.Hits(7) != 1 {
		t.Fatalf("storage served %d bodies (file 3: %d, file 7: %d), want exactly the two new downloads", site.TotalHits(), site.Hits(3), site.Hits(7))
	}
	if b := readFile(t, h.kept("files/Algebra/week3.pdf")); !bytes.Equal(b, downloadtest.Body(3, 2, 7777)) {
		t.Fatal("the changed file was not replaced by its new version")
	}
	if b := readFile(t, h.kept("files/Physics/errata.pdf")); !bytes.Equal(b, downloadtest.Body(7, 1, 1234)) {
		t.Fatal("the new file was not kept exactly")
	}
	kept, err := h.m.Downloads(context.Background(), owner, taskID)
	if err != nil || len(kept) != 7 {
		t.Fatalf("downloads list: %d files (%v), want 7", len(kept), err)
	}
	if got := h.say(owner, "/downloads "+taskID); !strings.Contains(got, "Physics/errata.pdf (1.2 KiB, Physics)") || strings.Count(got, ".pdf") != 7 {
		t.Fatalf("/downloads = %q, want the seven files with size and course", got)
	}
}
