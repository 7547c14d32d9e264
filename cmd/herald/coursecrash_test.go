package main

// The course-site crash test: the real `herald serve` keeps a Canvas
// course's files while SIGKILLed in the middle of slow downloads. After
// each restart every interrupted download is done again; in the end every
// file is present once with its exact bytes, no final name ever held a
// partial file, and no notice arrived twice.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/download/downloadtest"
)

const courseFileBytes = 48 << 10 // each file: 48 chunks of 1 KiB

func courseCrashConfig(addr, site string) string {
	return localService(addr) + fmt.Sprintf(`  download_hosts: [%q]
tasks:
  - id: cs101
    source:
      kind: canvas
      url: %q
      token: "${CANVAS_TOKEN}"
      download: {dir: files}
    schedule: every 1h
    notify: ["inbox:console:admin"]
`, downloadtest.StorageHost, site)
}

// checkKept fails on any final name whose bytes are not exactly the
// file's, and returns how many of want are complete.
func checkKept(t *testing.T, dir string, want map[string][]byte) int {
	t.Helper()
	done := 0
	for name, body := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%s holds %d bytes (%v), not the file's %d exactly: a partial file under a final name", name, len(got), err, len(body))
		}
		done++
	}
	return done
}

func TestI1_I3_SIGKILLDuringSlowDownloadsEveryFileOnceExact(t *testing.T) {
	mod := time.Now().Add(-time.Hour).Truncate(time.Second)
	var files []downloadtest.File
	want := map[string][]byte{}
	for id := 1; id <= 6; id++ {
		f := downloadtest.File{ID: id, Name: fmt.Sprintf("lecture%d.pdf", id), Modified: mod, Body: downloadtest.Body(id, 1, courseFileBytes+id)}
		files = append(files, f)
		want["Algebra/"+f.Name] = f.Body
	}
	site := downloadtest.NewCanvas([]downloadtest.Course{{ID: 10, Name: "Algebra", Files: files}}, nil, 4)
	defer site.Close()
	site.Slow(4 * time.Millisecond)

	cfg := writeConfig(t, courseCrashConfig(freeAddr(t), site.Site.URL))
	dataDir := filepath.Join(t.TempDir(), "data")
	kept := filepath.Join(dataDir, "downloads", "cs101", "files")
	env := "CANVAS_TOKEN=" + downloadtest.Token

	// Kill during the baseline's downloads, then again during the
	// downloads of a run that found a new file.
	p := startServeAt(t, cfg, dataDir, env)
	eventually(t, "a download under way after one completed", func() bool { return site.TotalHits() >= 2 })
	p.signal(syscall.SIGKILL)
	if n := checkKept(t, kept, want); n == len(want) {
		t.Fatal("every file was kept before the kill: the test did not interrupt a download")
	}

	p = startServeAt(t, cfg, dataDir, env)
	eventually(t, "the interrupted downloads done after a restart", func() bool { return checkKept(t, kept, want) == len(want) })
	extra := downloadtest.File{ID: 7, Name: "errata.pdf", Modified: time.Now().Truncate(time.Second), Body: downloadtest.Body(7, 1, courseFileBytes*2)}
	want["Algebra/"+extra.Name] = extra.Body
	site.Change(func(cs *[]downloadtest.Course, an *[]downloadtest.Announcement) {
		(*cs)[0].Files = append((*cs)[0].Files, extra)
		*an = append(*an, downloadtest.Announcement{ID: 301, CourseID: 10, Title: "Exam moved", Message: "Friday"})
	})
	hits := site.Hits(7)
	cli(t, dataDir, "tasks", "run", "cs101", "--no-wait")
	eventually(t, "the new file's download under way", func() bool { return site.Hits(7) > hits })
	p.signal(syscall.SIGKILL)
	checkKept(t, kept, want)

	site.Slow(0)
	p = startServeAt(t, cfg, dataDir, env)
	var list []download.Kept
	eventually(t, "every download completed", func() bool {
		cliJSON(t, dataDir, &list, "downloads", "list", "cs101")
		complete := 0
		for _, k := range list {
			if k.State == "completed" {
				complete++
			}
		}
		return complete == len(want)
	})
	if n := checkKept(t, kept, want); n != len(want) || len(list) != len(want) {
		t.Fatalf("%d of %d files kept, %d listed", n, len(want), len(list))
	}
	if out := cli(t, dataDir, "downloads", "list", "cs101"); !strings.Contains(out, "Algebra/errata.pdf") || !strings.Contains(out, "96.0 KiB") {
		t.Fatalf("herald downloads list:\n%s", out)
	}
	if out, errOut, code := run(t, "downloads", "list", "nope", "--data-dir", dataDir); code == 0 || !strings.Contains(errOut, "no task") {
		t.Fatalf("downloads list of an unknown task: exit %d\n%s%s", code, out, errOut)
	}
	// Once each: nothing else in the directory, no temp file left over.
	var names []string
	filepath.WalkDir(kept, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(kept, path)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(names) != len(want) {
		t.Fatalf("the directory holds %v, want exactly %d files", names, len(want))
	}
	for id := 1; id <= 7; id++ {
		if site.Hits(id) > 4 {
			t.Errorf("file %d fetched %d times", id, site.Hits(id))
		}
	}

	// No notice twice: the ledger holds one claim per notice and per
	// file version, and the inbox the baseline confirmation, the new file
	// and the announcement, each once.
	// The notices go on their own schedule: one may wait behind an
	// earlier push to the inbox for a while after the files are done.
	var fxs []effectView
	notices := 0
	eventually(t, "every notice ended", func() bool {
		cliJSON(t, dataDir, &fxs, "ledger", "show", "cs101")
		notices = 0
		ended := true
		for _, fx := range fxs {
			if !strings.HasPrefix(fx.Recipient, "download:") {
				notices++
				ended = ended && fx.State != "pending"
			}
		}
		return ended
	})
	if notices != 3 || len(fxs) != 3+len(want) {
		t.Fatalf("ledger holds %d notices and %d effects, want 3 and %d", notices, len(fxs), 3+len(want))
	}
	var items []inboxView
	cliJSON(t, dataDir, &items, "inbox", "list", "console:admin")
	seen := map[string]int{}
	for _, it := range items {
		for _, w := range []string{"errata.pdf", "Exam moved", "Watching"} {
			if strings.Contains(it.Title+" "+it.Text, w) {
				seen[w]++
			}
		}
	}
	if seen["errata.pdf"] != 1 || seen["Exam moved"] != 1 || seen["Watching"] != 1 {
		t.Fatalf("inbox %+v: want the new file and the announcement once each (%v); ledger %+v", items, seen, fxs)
	}
	p.signal(syscall.SIGTERM)
}
