package source

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

// genFeed builds an RSS 2.0 feed of n items with descriptions of about
// descLen bytes.
func genFeed(n, descLen int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>bench</title><link>https://news.example.edu/</link>`)
	desc := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", descLen/56+1)[:descLen]
	for i := range n {
		fmt.Fprintf(&b, "<item><title>Notice %d</title><link>/news/%d</link><guid isPermaLink=\"false\">n-%d</guid><pubDate>Mon, 30 Nov 2026 08:00:00 +0800</pubDate><description><![CDATA[<p>%s</p>]]></description></item>\n", i, i, i, desc)
	}
	b.WriteString(`</channel></rss>`)
	return b.Bytes()
}

func BenchmarkParseFeed10k(b *testing.B) {
	body := genFeed(10000, 200)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		items, err := parseFeed(body, "", fuzzBase)
		if err != nil || len(items) != 10000 {
			b.Fatalf("%d items, %v", len(items), err)
		}
	}
}

// BenchmarkPeakHeap10MiB fetches and parses a feed just under the 10 MiB
// cap through the real fetcher and reports the peak live heap above the
// baseline, sampled from runtime/metrics while the fetch runs.
func BenchmarkPeakHeap10MiB(b *testing.B) {
	body := genFeed(9000, 900)
	if len(body) > DefaultMaxBytes {
		b.Fatalf("feed is %d bytes, over the cap", len(body))
	}
	srv := newBenchServer(b, body)
	s := newTestSource(b, watch.Spec{Kind: KindRSS, URL: srv}, Options{})
	b.SetBytes(int64(len(body)))
	var peak uint64
	for b.Loop() {
		var res watch.Result
		p := peakHeap(func() { res = mustFetch(b, s) })
		if len(res.Items) != 9000 {
			b.Fatalf("%d items", len(res.Items))
		}
		peak = max(peak, p)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(len(body))/(1<<20), "doc-MiB")
}

func newBenchServer(b *testing.B, body []byte) string {
	b.Helper()
	srv := newTestServerTB(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write(body)
	}))
	return srv
}

// peakHeap runs f and returns the highest heap-object bytes seen above the
// level before it started.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var (
		peak uint64
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			if v := read(); v > peak {
				peak = v
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	if v := read(); v > peak {
		peak = v
	}
	if peak < base {
		return 0
	}
	return peak - base
}
