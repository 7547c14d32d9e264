package main

// Webhook delivery on the Standard Webhooks model (SPEC §21), end to end:
// the real `herald serve` pushes inbound events to a scripted receiver on
// loopback, is killed while a retry waits, disables a recipient that
// answers 410 and turns it back on from the CLI, and replays a range.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/webhook/signature"
)

// scriptedHit is one request the scripted receiver got.
type scriptedHit struct {
	ID, Timestamp string
	Body          []byte
	Code          int
}

// scriptedReceiver answers its nth request (1-based, across ids) with
// codes[n-1], any later one 204, and checks every signature.
type scriptedReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	codes []int
	hits  []scriptedHit
	bad   int
}

func newScriptedReceiver(t *testing.T, codes ...int) *scriptedReceiver {
	t.Helper()
	key, err := signature.ParseSecret(recipientSecret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &scriptedReceiver{codes: codes}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		sigErr := signature.Verify([][]byte{key}, id, ts, r.Header.Get("webhook-signature"), body, time.Now(), 5*time.Minute)
		rc.mu.Lock()
		code := http.StatusNoContent
		if n := len(rc.hits); n < len(rc.codes) {
			code = rc.codes[n]
		}
		rc.hits = append(rc.hits, scriptedHit{ID: id, Timestamp: ts, Body: body, Code: code})
		if sigErr != nil {
			rc.bad++
		}
		rc.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *scriptedReceiver) received() []scriptedHit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]scriptedHit(nil), rc.hits...)
}

// retriesConfig routes inbound hook ci to webhook recipient sink with
// the given extra keys (retry_schedule, idempotent).
func retriesConfig(addr, receiverURL, extra string) string {
	return localService(addr) + fmt.Sprintf(`recipients:
  sink:
    webhook: {url: %q, secret: %q%s}
inbound:
  ci:
    format: standard
    secret: "${%s}"
    route: [sink]
`, receiverURL+"/herald", recipientSecret, extra, hookSecretEnv)
}

// postEvent posts one signed event to /hooks/ci until herald accepts it.
func postEvent(t *testing.T, p *proc, id string) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"title":"build %s finished"}`, id))
	eventually(t, "herald accepts event "+id, func() bool {
		req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), bytes.NewReader(body))
		req.Header = signHook(hookSecret, id, time.Now(), body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode/100 == 2
	})
}

// sinkEffect is the hook's effect for event id, read through the CLI.
func sinkEffect(t *testing.T, dataDir, id string) effectRow {
	t.Helper()
	var rows []effectRow
	cliJSON(t, dataDir, &rows, "ledger", "show", "hook:ci")
	key := delivery.EffectKey("hook:ci", id, "sink")
	for _, r := range rows {
		if r.Key == key {
			return r
		}
	}
	return effectRow{}
}

// TestSpec21_KillWhileRetryWaitsRetriesOnceWithSameID: the receiver
// answers 503; while herald waits to retry, it is killed with SIGKILL
// and started again. The retry still happens, once, under the same
// webhook-id, with the same body and a fresh signed timestamp, and the
// push ends completed.
func TestSpec21_KillWhileRetryWaitsRetriesOnceWithSameID(t *testing.T) {
	rc := newScriptedReceiver(t, http.StatusServiceUnavailable)
	addr := freeAddr(t)
	cfgPath := writeConfig(t, retriesConfig(addr, rc.srv.URL, ", retry_schedule: [4s]"))
	dataDir := t.TempDir()
	env := []string{hookSecretEnv + "=" + hookSecret}
	p := startServeAt(t, cfgPath, dataDir, env...)
	postEvent(t, p, "evt-1")
	eventually(t, "the first attempt answered 503 and its retry waiting", func() bool {
		fx := sinkEffect(t, dataDir, "evt-1")
		return len(rc.received()) == 1 && fx.State == "pending" && fx.Attempts == 1
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p = startServeAt(t, cfgPath, dataDir, env...)
	eventually(t, "the retry after the restart", func() bool { return sinkEffect(t, dataDir, "evt-1").State == "completed" })
	time.Sleep(5 * time.Second) // a second retry would be due by now
	hits := rc.received()
	if len(hits) != 2 || hits[0].ID != hits[1].ID || !bytes.Equal(hits[0].Body, hits[1].Body) {
		t.Fatalf("receiver saw %d requests %+v; want the 503 and one retry with the same id and body", len(hits), hits)
	}
	if hits[0].ID != delivery.EffectKey("hook:ci", "evt-1", "sink") || rc.bad != 0 {
		t.Errorf("webhook-id %q, %d bad signatures", hits[0].ID, rc.bad)
	}
	if fx := sinkEffect(t, dataDir, "evt-1"); fx.Attempts != 2 {
		t.Errorf("%d attempts recorded, want 2", fx.Attempts)
	}
	p.signal(syscall.SIGTERM)
}

// recipientRow is the documented `recipients list --json` element.
type recipientRow struct {
	Name        string    `json:"name"`
	Kind        string    `json:"kind"`
	State       string    `json:"state"`
	Reason      string    `json:"reason"`
	DisabledAt  time.Time `json:"disabled_at"`
	LastSuccess time.Time `json:"last_success"`
	Failures    int       `json:"failures"`
	LastError   string    `json:"last_error"`
}

// TestSpec21_GoneDisablesNoticeOnceEnableDelivers: a 410 disables the
// recipient: `herald recipients list` shows it disabled (gone), the
// admins get exactly one notice naming it, later pushes end failed
// (recipient_disabled) with no attempt, and after `herald recipients
// enable` a new push is delivered.
func TestSpec21_GoneDisablesNoticeOnceEnableDelivers(t *testing.T) {
	rc := newScriptedReceiver(t, http.StatusGone)
	addr := freeAddr(t)
	p := startServeAt(t, writeConfig(t, retriesConfig(addr, rc.srv.URL, "")), t.TempDir(), hookSecretEnv+"="+hookSecret)
	dataDir := p.dataDir
	postEvent(t, p, "evt-gone")
	eventually(t, "the 410 recorded", func() bool { return sinkEffect(t, dataDir, "evt-gone").State == "failed" })
	for i := range 3 {
		id := fmt.Sprintf("evt-later-%d", i)
		postEvent(t, p, id)
		eventually(t, id+" ended", func() bool { return sinkEffect(t, dataDir, id).State == "failed" })
		if fx := sinkEffect(t, dataDir, id); fx.Error != delivery.ReasonDisabled || fx.Attempts != 0 {
			t.Errorf("%s: %d attempts, error %q; want none, %s", id, fx.Attempts, fx.Error, delivery.ReasonDisabled)
		}
	}
	if got := len(rc.received()); got != 1 {
		t.Errorf("receiver saw %d requests, want only the one answered 410", got)
	}
	var rows []recipientRow
	cliJSON(t, dataDir, &rows, "recipients", "list")
	if len(rows) != 1 || rows[0].Name != "sink" || rows[0].State != "disabled" || rows[0].Reason != "gone" || rows[0].Kind != "webhook" {
		t.Fatalf("recipients list: %+v; want sink, webhook, disabled (gone)", rows)
	}
	if out := cli(t, dataDir, "recipients", "list"); !strings.Contains(out, "disabled (gone)") {
		t.Errorf("recipients list does not say disabled (gone):\n%s", out)
	}
	var notices []effectRow
	cliJSON(t, dataDir, &notices, "ledger", "show", "recipients")
	if len(notices) != 1 {
		t.Fatalf("%d disable notices, want exactly one (to the one admin): %+v", len(notices), notices)
	}
	if notices[0].Recipient != "inbox:console:admin" {
		t.Errorf("the notice went to %q, want the admin's inbox", notices[0].Recipient)
	}
	eventually(t, "the notice in the admin's inbox", func() bool {
		out := cli(t, dataDir, "inbox", "list", "console:admin", "--json")
		return strings.Contains(out, "sink") && strings.Contains(out, "herald recipients enable sink")
	})

	out := cli(t, dataDir, "recipients", "enable", "sink")
	if !strings.Contains(out, "sink is enabled") {
		t.Errorf("enable said %q", out)
	}
	postEvent(t, p, "evt-after")
	eventually(t, "the push after enable delivered", func() bool { return sinkEffect(t, dataDir, "evt-after").State == "completed" })
	if hits := rc.received(); len(hits) != 2 || hits[1].ID != delivery.EffectKey("hook:ci", "evt-after", "sink") {
		t.Errorf("receiver saw %+v; want the 410 and the push after enable", hits)
	}
	cliJSON(t, dataDir, &rows, "recipients", "list")
	if rows[0].State != "enabled" {
		t.Errorf("after enable: %+v", rows[0])
	}
	p.signal(syscall.SIGTERM)
}

// rangeRow is one push `ledger redeliver --recipient --json` lists.
type rangeResult struct {
	DryRun  bool `json:"dry_run"`
	Queued  int  `json:"queued"`
	Effects []struct {
		Key       string    `json:"key"`
		Task      string    `json:"task"`
		State     string    `json:"state"`
		Error     string    `json:"error"`
		CreatedAt time.Time `json:"created_at"`
	} `json:"effects"`
}

// TestSpec21_RangeRedeliverDryRunThenEachOnce: three pushes answered 400
// end failed and one is completed. `herald ledger redeliver --recipient
// sink --dry-run` lists the three and sends nothing; the real run sends
// each failed push again once, with its original webhook-id and body,
// and never the completed one.
func TestSpec21_RangeRedeliverDryRunThenEachOnce(t *testing.T) {
	rc := newScriptedReceiver(t, http.StatusBadRequest, http.StatusBadRequest, http.StatusBadRequest)
	addr := freeAddr(t)
	p := startServeAt(t, writeConfig(t, retriesConfig(addr, rc.srv.URL, "")), t.TempDir(), hookSecretEnv+"="+hookSecret)
	dataDir := p.dataDir
	for i := range 4 {
		id := fmt.Sprintf("evt-%d", i)
		postEvent(t, p, id)
		eventually(t, id+" ended", func() bool { s := sinkEffect(t, dataDir, id).State; return s == "failed" || s == "completed" })
	}
	before := rc.received()

	var dry rangeResult
	cliJSON(t, dataDir, &dry, "ledger", "redeliver", "--recipient", "sink", "--state", "failed", "--dry-run")
	if !dry.DryRun || len(dry.Effects) != 3 || dry.Queued != 0 {
		t.Fatalf("dry run: %+v; want 3 listed, none queued", dry)
	}
	time.Sleep(2 * time.Second)
	if got := len(rc.received()); got != len(before) {
		t.Fatalf("the dry run sent %d requests", got-len(before))
	}
	out := cli(t, dataDir, "ledger", "redeliver", "--recipient", "sink", "--yes")
	if !strings.Contains(out, "3 pushes queued again") {
		t.Errorf("redeliver said:\n%s", out)
	}
	eventually(t, "the three sent again", func() bool { return len(rc.received()) == len(before)+3 })
	time.Sleep(2 * time.Second)
	hits := rc.received()
	if len(hits) != len(before)+3 {
		t.Fatalf("receiver saw %d requests after the run, want 3", len(hits)-len(before))
	}
	orig := map[string][]byte{}
	for _, h := range before {
		if h.Code == http.StatusBadRequest {
			orig[h.ID] = h.Body
		}
	}
	again := map[string]int{}
	for _, h := range hits[len(before):] {
		again[h.ID]++
		if b, ok := orig[h.ID]; !ok || !bytes.Equal(b, h.Body) {
			t.Errorf("sent again %s, which did not fail or changed its body", h.ID)
		}
	}
	for id := range orig {
		if again[id] != 1 {
			t.Errorf("%s sent again %d times, want once", id, again[id])
		}
	}
	p.signal(syscall.SIGTERM)
}
