package download_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/download/downloadtest"
	"github.com/herald-bridge/herald/tasks/watch"
)

// benchFiles is the size of the benchmarks' course.
var benchFiles = 2000

// bigCourse is one course of n small files, listed 100 to a page.
func bigCourse(n int) *downloadtest.Site {
	mod := time.Now().Add(-time.Hour).Truncate(time.Second)
	files := make([]downloadtest.File, n)
	for i := range files {
		files[i] = downloadtest.File{ID: i + 1, Name: fmt.Sprintf("f%04d.pdf", i+1), Modified: mod, Body: downloadtest.Body(i+1, 1, 512)}
	}
	return downloadtest.NewCanvas([]downloadtest.Course{{ID: 1, Name: "Big", Files: files}}, nil, 100)
}

// BenchmarkCanvasRunKeeping2000 is one unchanged run of a task keeping
// 2,000 files: the 20-page listing, the diff, and a ledger look-up per
// file to find none left to download.
func BenchmarkCanvasRunKeeping2000(b *testing.B) {
	site := bigCourse(benchFiles)
	defer site.Close()
	spec := watch.Spec{Kind: "canvas", URL: site.Site.URL, Token: downloadtest.Token, Watch: []string{"files"},
		Download: &watch.Download{Dir: "files"}}
	h := start(b, spec, tasks.Policy{})
	h.bound = 5 * time.Minute
	for h.run().Deferred > 0 {
	}
	h.settled()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if rec := h.run(); rec.Items != benchFiles || rec.Downloads != 0 {
			b.Fatalf("run = %+v", rec)
		}
	}
}

// BenchmarkCanvasDownload2000 keeps a 2,000-file course from nothing:
// runs claim 100 downloads each (I7) until none is left, and the
// dispatcher and download sink fetch and write them all.
func BenchmarkCanvasDownload2000(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		site := bigCourse(benchFiles)
		spec := watch.Spec{Kind: "canvas", URL: site.Site.URL, Token: downloadtest.Token, Watch: []string{"files"},
			Download: &watch.Download{Dir: "files"}}
		b.StartTimer()
		h := start(b, spec, tasks.Policy{})
		h.bound = 5 * time.Minute
		for h.run().Deferred > 0 { // 100 claimed per run (I7)
		}
		// Wait on the site's counter, cheap to read, before reading the
		// ledger once: the benchmark measures herald, not the waiting.
		h.eventually("every file fetched", func() bool { return site.TotalHits() == benchFiles })
		for _, fx := range h.settled() {
			if fx.State != store.Completed {
				b.Fatalf("download ended %s (%s)", fx.State, fx.Error)
			}
		}
		b.StopTimer()
		h.stop()
		site.Close()
		b.StartTimer()
	}
}

func init() {
	if n, err := strconv.Atoi(os.Getenv("HERALD_BENCH_FILES")); err == nil && n > 0 {
		benchFiles = n
	}
}
