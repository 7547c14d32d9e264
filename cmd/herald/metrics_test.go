package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scrape reads /metrics as text.
func scrape(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}

// TestI10_MetricsCoverRunsFetchesInboundHoldsAndLedgerNamingNoRecipient:
// after a task run, an inbound event accepted, the same event again, one
// with a bad signature and one to a hook that does not exist, /metrics
// has series for task runs (by kind and outcome, with durations), fetches
// (status class, bytes), inbound events (accepted, duplicate, refused by
// reason), holds (held, released) and ledger effects by state — and none
// names a recipient, a URL, a secret or a task by name.
func TestI10_MetricsCoverRunsFetchesInboundHoldsAndLedgerNamingNoRecipient(t *testing.T) {
	fx := newFixture(t)
	p, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")

	body := []byte(`{"title":"deploy","url":"https://ci.example.com/d"}`)
	post := func(path, secret, id string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.url(path), bytes.NewReader(body))
		req.Header = signHook(secret, id, time.Now(), body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/hooks/ci", hookSecret, "msg_metrics_1")
	post("/hooks/ci", hookSecret, "msg_metrics_1")
	post("/hooks/ci", "whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC0wMTIzNDU2Nzg=", "msg_metrics_2")
	post("/hooks/nope", hookSecret, "msg_metrics_3")

	want := []string{
		`herald_task_runs_total{kind="rss",outcome="baseline"} 1`,
		`herald_task_run_seconds_count{kind="rss"} 1`,
		`herald_fetches_total{class="2xx"} `,
		`herald_fetch_bytes_total `,
		`herald_inbound_events_total{reason="",result="accepted"} 1`,
		`herald_inbound_events_total{reason="",result="duplicate"} 1`,
		`herald_inbound_events_total{reason="bad_signature",result="refused"} 1`,
		`herald_inbound_events_total{reason="not_found",result="refused"} 1`,
		`herald_delivery_held_total `,
		`herald_delivery_released_total `,
		`herald_ledger_effects_total{state="pending"} `,
		`herald_ledger_effects_total{state="completed"} `,
	}
	var metrics string
	eventually(t, "every series to appear", func() bool {
		metrics = scrape(t, p)
		for _, w := range want {
			if !strings.Contains(metrics, "\n"+w) {
				return false
			}
		}
		return true
	})
	if strings.Contains(metrics, "\nherald_fetch_bytes_total 0\n") {
		t.Error("a fetch read a feed, yet herald_fetch_bytes_total is 0")
	}
	for _, leak := range append(secretsIn(metrics), func() (out []string) {
		for _, s := range []string{fx.rcv.srv.URL, fx.feed.url(), "127.0.0.1", "inbox:", "console:admin", "Omni news", `task="`, `recipient="`, "msg_metrics"} {
			if strings.Contains(metrics, s) {
				out = append(out, s)
			}
		}
		return out
	}()...) {
		t.Errorf("/metrics names %q", leak)
	}
}
