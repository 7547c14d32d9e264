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

// TestI1_MoodleFilesAreItemsAndKeptOncePerVersion: Moodle course files
// come from core_course_get_contents, are items with notices like any
// other, and go through the same downloader with the token in
// pluginfile's query, added when fetched and never kept (I10).
func TestI1_MoodleFilesAreItemsAndKeptOncePerVersion(t *testing.T) {
	mod := time.Now().Add(-time.Hour).Truncate(time.Second)
	site := downloadtest.NewMoodle("Chemistry", time.Now().Add(30*24*time.Hour), []downloadtest.MoodleFile{
		{Module: 60, Name: "syllabus.pdf", Modified: mod, Body: downloadtest.Body(60, 1, 2048)},
	})
	defer site.Close()
	spec := watch.Spec{Kind: "moodle", URL: site.URL, Token: downloadtest.Token,
		Watch: []string{"assignments", "files"}, Download: &watch.Download{Dir: "chem"}}
	h := start(t, spec, tasks.Policy{})
	runs := h.waitRunsList()
	if runs[0].Outcome != tasks.OutcomeBaseline || runs[0].Items != 2 || runs[0].Downloads != 1 {
		t.Fatalf("baseline = %+v, want 2 items and 1 download", runs[0])
	}
	for _, fx := range h.settled() {
		if fx.State != store.Completed {
			t.Fatalf("download ended %s (%s)", fx.State, fx.Error)
		}
	}
	if b := readFile(t, h.kept("chem/Chemistry/syllabus.pdf")); !bytes.Equal(b, downloadtest.Body(60, 1, 2048)) {
		t.Fatal("the Moodle file was not kept exactly")
	}
	site.Change(func(fs *[]downloadtest.MoodleFile) {
		*fs = append(*fs, downloadtest.MoodleFile{Module: 61, Name: "week1.pdf", Modified: mod, Body: downloadtest.Body(61, 1, 999)})
	})
	if rec := h.run(); rec.New != 1 || rec.Downloads != 1 {
		t.Fatalf("run = %+v, want one new file and one download", rec)
	}
	h.settled()
	h.run()
	h.settled()
	if site.Hits("syllabus.pdf") != 1 || site.Hits("week1.pdf") != 1 {
		t.Fatalf("fetched syllabus %d and week1 %d times, want once each", site.Hits("syllabus.pdf"), site.Hits("week1.pdf"))
	}
	fxs, _ := h.st.Ledger().List(context.Background(), taskID, 0)
	for _, fx := range fxs {
		if strings.Contains(string(fx.Payload), downloadtest.Token) || strings.Contains(fx.Error+fx.ProviderID, downloadtest.Token) {
			t.Fatalf("effect %s keeps the token (I10)", fx.Key)
		}
	}
	notices, _ := h.effects()
	if got := itemTitles(t, notices); len(notices) != 1 || got["new Chemistry: week1.pdf"] != 1 {
		t.Fatalf("notices %v, want only the new file", got)
	}
}
