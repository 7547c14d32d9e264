package main

// The digest crash test: the real `herald serve` claims a webhook
// recipient's digest while the recipient cannot be reached, and is
// SIGKILLed before it could send it. After the restart the digest goes
// out once, with every held notice in it, and never again.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// digestReceiver is a webhook endpoint on a fixed address, started late.
type digestReceiver struct {
	mu     sync.Mutex
	bodies []string
}

func (rc *digestReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, string(b))
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *digestReceiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bodies...)
}

func digestCrashConfig(addr, feedURL, hookAddr string, fire time.Time) string {
	return localService(addr) + fmt.Sprintf(`recipients:
  ops:
    webhook: {url: "http://%s/herald", secret: %q, idempotent: false}
    digest: "at %s"
tasks:
  - id: news
    source: {kind: rss, url: %q}
    schedule: every 1h
    notify: [ops]
`, hookAddr, recipientSecret, fire.UTC().Format(time.RFC3339), feedURL)
}

func ledgerOf(t *testing.T, dataDir, source string) []effectView {
	t.Helper()
	var fxs []effectView
	cliJSON(t, dataDir, &fxs, "ledger", "show", source)
	return fxs
}

func TestI1_DigestClaimedBeforeSIGKILLIsSentOnceAfterTheRestart(t *testing.T) {
	f := newFeed(t)
	hookAddr := freeAddr(t) // nothing listens there until after the kill
	// The digest fires once, soon: an `at` schedule is the one a test can
	// wait for without waiting long.
	fire := time.Now().Add(15 * time.Second).Truncate(time.Second)
	cfg := writeConfig(t, digestCrashConfig(freeAddr(t), f.url(), hookAddr, fire))
	dataDir := filepath.Join(t.TempDir(), "data")

	p := startServeAt(t, cfg, dataDir)
	waitBaseline(t, dataDir, "news")
	// The baseline's one confirmation (task.state) is all it claims (I2).
	if fxs := ledgerOf(t, dataDir, "news"); len(fxs) > 1 {
		t.Fatalf("the baseline claimed %d pushes to ops, want at most its confirmation (I2)", len(fxs))
	}
	for i := 1; i <= 3; i++ {
		f.addItem(fmt.Sprintf("digest-%d", i), fmt.Sprintf("Digest item %d", i))
	}
	cli(t, dataDir, "tasks", "run", "news")
	eventually(t, "three notices held for the digest", func() bool {
		held := 0
		for _, fx := range ledgerOf(t, dataDir, "news") {
			if fx.State == "pending" && fx.Error == "held: digest" {
				held++
			}
		}
		return held == 3
	})
	if time.Now().After(fire) {
		t.Fatal("the notices were held after the digest fired; the machine is too slow for this schedule")
	}
	time.Sleep(time.Until(fire)) // the fire, on the service's own clock
	eventually(t, "the digest claimed at its fire, its recipient unreachable", func() bool {
		fxs := ledgerOf(t, dataDir, "digest")
		return len(fxs) == 1 && fxs[0].State == "pending" && fxs[0].Attempts >= 1
	})
	p.signal(syscall.SIGKILL)

	rc := &digestReceiver{}
	l, err := net.Listen("tcp", hookAddr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(rc)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	p = startServeAt(t, cfg, dataDir)
	eventually(t, "the digest delivered after the restart", func() bool {
		fxs := ledgerOf(t, dataDir, "digest")
		return len(fxs) == 1 && fxs[0].State == "completed"
	})
	inDigest := 0
	for _, fx := range ledgerOf(t, dataDir, "news") {
		if fx.State == "completed" && strings.HasPrefix(fx.Error, "sent on in digest ") {
			inDigest++
		}
	}
	if inDigest != 3 {
		t.Errorf("%d notices ended in the digest, want 3", inDigest)
	}
	// A while more: nothing goes out again.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	<-ctx.Done()
	cancel()
	var digests []string
	for _, raw := range rc.received() {
		var body struct {
			Type  string            `json:"type"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal([]byte(raw), &body); err != nil {
			t.Fatal(err)
		}
		switch body.Type {
		case "watch.digest":
			if len(body.Items) != 3 {
				t.Errorf("the digest lists %d items, want 3", len(body.Items))
			}
			digests = append(digests, raw)
		case "watch.changed":
			t.Errorf("a notice went out on its own: %s", raw)
		}
	}
	if len(digests) != 1 {
		t.Fatalf("the recipient got %d digests, want one: %q", len(digests), digests)
	}
	p.signal(syscall.SIGTERM)
}
