package main

import (
	"regexp"
	"strings"
	"testing"
)

// A source host's 503 with Retry-After: `tasks run` says the failure in
// the source's words, `tasks show` says it and when the next check is and
// why, and a check asked for during the hold waits (SPEC §18).
func TestCLI_TasksShowSaysNextCheckWhyAndTheFailure(t *testing.T) {
	fx := newFixture(t)
	p, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	out := cli(t, dataDir, "tasks", "show", "news")
	if !strings.Contains(out, "(on schedule)") {
		t.Errorf("tasks show does not say the next check is on schedule:\n%s", out)
	}

	fx.feed.setBusy(true)
	out, _, _ = run(t, "tasks", "run", "news", "--data-dir", dataDir)
	if !strings.Contains(out, "error: transient: GET http://127.0.0.1:") || !strings.Contains(out, "HTTP 503") {
		t.Errorf("tasks run does not say why the check failed:\n%s", out)
	}
	out = cli(t, dataDir, "tasks", "show", "news")
	for _, want := range []string{
		"last error: transient: GET http://127.0.0.1:",
		"HTTP 503 (1 failure in a row)",
		"(on schedule)", // the 2 min hold ends before the 30 min schedule
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tasks show lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "HTTP 503") < 2 {
		t.Errorf("the run's row does not say why it failed:\n%s", out)
	}
	// The run's log line says why too, and its durations carry units.
	log := p.log.String()
	if !regexp.MustCompile(`"reason":"transient: GET http://127\.0\.0\.1:\d+: HTTP 503"[^\n]*"message":"run finished"`).MatchString(log) {
		t.Errorf("the failed run's log line does not say why:\n%s", log)
	}
	if m := regexp.MustCompile(`"(took|wait|retry_in)":-?[0-9]`).FindString(log); m != "" {
		t.Errorf("a duration without a unit in the log: %s\n%s", m, log)
	}
	if !strings.Contains(log, `"wait":"2m0s"`) {
		t.Errorf("the host's hold is not logged with its wait:\n%s", log)
	}

	fx.feed.setBusy(false)
	out = cli(t, dataDir, "tasks", "run", "news")
	if !strings.Contains(out, "news: postponed") || !strings.Contains(out, "note: 127.0.0.1 asked herald to wait until") {
		t.Errorf("a check asked for during the hold:\n%s", out)
	}
	if n := fx.feed.requests(); n != 2 {
		t.Errorf("the feed saw %d requests, want 2: the held check must not reach it", n)
	}
	out = cli(t, dataDir, "tasks", "show", "news")
	if !strings.Contains(out, "127.0.0.1 asked herald to wait until then") {
		t.Errorf("tasks show does not say the host asked to wait:\n%s", out)
	}
}

// requests is how many requests the feed has seen.
func (f *feed) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

// Conditional GET: the share of source documents answered 304 Not
// Modified is in /metrics and in `herald status`.
func TestMetrics_ShareOf304sInMetricsAndStatus(t *testing.T) {
	fx := newFixture(t)
	p, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news") // a full document, no validators yet
	fx.feed.mu.Lock()
	fx.feed.etag = true
	fx.feed.mu.Unlock()
	for range 3 { // full with an ETag, then 304, 304
		cli(t, dataDir, "tasks", "run", "news")
	}
	got := scrape(t, p)
	for _, want := range []string{
		`herald_fetch_documents_total{answer="full"} 2`,
		`herald_fetch_documents_total{answer="not_modified"} 2`,
		`herald_fetch_not_modified_ratio 0.5`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(got, "herald_fetch"))
		}
	}
	if out := cli(t, dataDir, "status"); !strings.Contains(out, "sources:  4 documents read, 2 answered 304 Not Modified (50%)") {
		t.Errorf("status does not report the 304 share:\n%s", out)
	}
}
