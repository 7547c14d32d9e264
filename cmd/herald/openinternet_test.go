package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// slowAttack is one address posting bodies to a hook from many
// connections, coming back as soon as it is answered: half of them send a
// byte at a time, half send all but the last byte of a 1 MiB body at once
// and then stall (memory held before authentication).
type slowAttack struct {
	opened, open, maxOpen atomic.Int64
	mu                    sync.Mutex
	answers               map[int]int // status (0: connection closed without an answer) → count
	wg                    sync.WaitGroup
}

func startSlowAttack(ctx context.Context, from, target, path string, conns int) *slowAttack {
	a := &slowAttack{answers: map[int]int{}}
	for i := range conns {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for ctx.Err() == nil {
				a.once(ctx, from, target, path, i%2 == 1)
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
		}()
	}
	return a
}

// once holds one connection until it is answered or the attack ends.
func (a *slowAttack) once(ctx context.Context, from, target, path string, bulk bool) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return
	}
	defer c.Close()
	a.opened.Add(1)
	if n := a.open.Add(1); n > a.maxOpen.Load() {
		a.maxOpen.Store(n)
	}
	defer a.open.Add(-1)
	// Headers that pass every check made before the body: present, well
	// formed, timestamp now. The body (declared 1 MiB) never completes.
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: herald\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"webhook-id: slow-%d\r\nwebhook-timestamp: %d\r\nwebhook-signature: v1,%s=\r\n\r\n{",
		path, 1<<20, a.opened.Load(), time.Now().Unix(), strings.Repeat("A", 43))
	if _, err := io.WriteString(c, head); err != nil {
		return
	}
	if bulk {
		go func() { _, _ = c.Write(almostMiB) }()
	}
	done := make(chan int, 1)
	go func() {
		status := 0
		if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			status = res.StatusCode
			res.Body.Close()
		}
		done <- status
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case status := <-done:
			a.mu.Lock()
			a.answers[status]++
			a.mu.Unlock()
			return
		case <-tick.C:
			if !bulk {
				_, _ = c.Write([]byte(" "))
			}
		case <-ctx.Done():
			c.Close()
			<-done
			return
		}
	}
}

// almostMiB is all but the last two bytes of a 1 MiB body ("{" is sent with the headers).
var almostMiB = []byte(strings.Repeat(" ", 1<<20-2))

// memKiB reads a VmRSS/VmHWM-style line of /proc/pid/status, in KiB.
func memKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// Under a slow-body attack from 127.0.0.2 against one hook — hundreds of
// connections, each declaring a 1 MiB body, sending it a byte at a time
// or all but its last byte, and coming back when answered — a correctly signed event from 127.0.0.1 is
// accepted and delivered once; `herald tasks list`, the inbox API, the
// console and /healthz answer within 2 s; /readyz and the metrics say
// inbound is shedding; and herald's RSS stays within 200 MiB of idle.
func TestI7_SlowBodyAttackFromOneAddressLeavesEveryoneElseServed(t *testing.T) {
	if testing.Short() {
		t.Skip("attack runs for 12 s")
	}
	const attackers, attackFor, bound = 400, 12 * time.Second, 2 * time.Second
	rcv := newReceiver(t)
	addr := freeAddr(t)
	p, dataDir := startServe(t, crashConfig(addr, rcv.srv.URL, true), hookSecretEnv+"="+hookSecret)
	pid := p.cmd.Process.Pid
	var tok struct {
		Token string `json:"token"`
		URL   string `json:"url"`
	}
	cliJSON(t, dataDir, &tok, "inbox", "token", "console:admin")
	hc := &http.Client{Timeout: bound}
	idleKiB := memKiB(t, pid, "VmRSS")

	ctx, stopAttack := context.WithCancel(context.Background())
	attack := startSlowAttack(ctx, "127.0.0.2", addr, "/hooks/ci", attackers)
	defer func() { stopAttack(); attack.wg.Wait() }()
	began := time.Now()
	eventually(t, "/readyz says inbound is shedding", func() bool {
		resp, err := hc.Get(p.url("/readyz"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var detail map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&detail)
		return resp.StatusCode == http.StatusOK && detail["inbound"] == "shedding"
	})

	worst := map[string]time.Duration{}
	timed := func(what string, fn func() error) {
		t.Helper()
		start := time.Now()
		err := fn()
		took := time.Since(start)
		worst[what] = max(worst[what], took)
		if err != nil || took > bound {
			t.Errorf("%s under attack: %v after %v", what, err, took.Round(time.Millisecond))
		}
	}
	get := func(path string, header http.Header, want int) func() error {
		return func() error {
			req, _ := http.NewRequest(http.MethodGet, p.url(path), nil)
			req.Header = header
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != want {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		}
	}
	body := []byte(`{"title":"deploy under attack","url":"https://ci.example.com/1"}`)
	for round := 0; time.Since(began) < attackFor; round++ {
		if round == 0 {
			timed("signed hook from 127.0.0.1", func() error {
				req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), strings.NewReader(string(body)))
				req.Header = signHook(hookSecret, "evt-under-attack", time.Now(), body)
				resp, err := hc.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			})
		}
		timed("herald tasks list", func() error {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(cctx, heraldBin, "tasks", "list", "--json", "--data-dir", dataDir)
			cmd.Env = childEnv()
			out, err := cmd.Output()
			if err == nil && !json.Valid(out) {
				err = fmt.Errorf("not JSON: %q", out)
			}
			return err
		})
		timed("inbox API", get("/api/v1/inbox", http.Header{"Authorization": {"Bearer " + tok.Token}}, http.StatusOK))
		timed("console", get("/console", nil, http.StatusOK))
		timed("/healthz", get("/healthz", nil, http.StatusOK))
		time.Sleep(time.Second)
	}
	stopAttack()
	attack.wg.Wait()
	attackSeconds := time.Since(began).Seconds()
	peakKiB := memKiB(t, pid, "VmHWM")

	eventually(t, "the event accepted under attack is delivered", func() bool { return len(rcv.deliveries()) >= 1 })
	time.Sleep(time.Second)
	if got := rcv.deliveries(); len(got) != 1 {
		t.Errorf("%d deliveries, want exactly 1", len(got))
	}
	resp, err := hc.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `herald_inbound_shed_total{reason="client_busy"} `) ||
		strings.Contains(string(metrics), `herald_inbound_shed_total{reason="client_busy"} 0`+"\n") {
		t.Errorf("metrics do not count the refused attack:\n%s", grepLines(string(metrics), "herald_inbound_"))
	}
	attack.mu.Lock()
	answers := fmt.Sprint(attack.answers)
	attack.mu.Unlock()
	t.Logf("attack: %d connections from 127.0.0.2 by %d attackers over %.1f s, at most %d open at once; answers by status %s",
		attack.opened.Load(), attackers, attackSeconds, attack.maxOpen.Load(), answers)
	t.Logf("worst latency under attack: %v", worst)
	t.Logf("RSS idle %.1f MiB, peak %.1f MiB (+%.1f MiB)", float64(idleKiB)/1024, float64(peakKiB)/1024, float64(peakKiB-idleKiB)/1024)
	if peakKiB-idleKiB > 200<<10 {
		t.Errorf("peak RSS %d KiB is more than 200 MiB over idle (%d KiB)", peakKiB, idleKiB)
	}
	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after the attack", code)
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A GitHub-format hook's captured body and signature, sent again under a
// new X-GitHub-Delivery after a restart, is answered as a duplicate and
// pushed no second time: the body's digest is claimed in the ledger.
func TestI1_GitHubBodyReplayedAfterARestartIsADuplicate(t *testing.T) {
	const ghSecret = "gh-secret-for-herald-tests"
	rcv := newReceiver(t)
	addr := freeAddr(t)
	cfg := writeConfig(t, localService(addr)+fmt.Sprintf(`recipients:
  sink:
    webhook: {url: %q, secret: %q}
inbound:
  gh:
    format: github
    secret: %q
    route: [sink]
`, rcv.srv.URL+"/herald", recipientSecret, ghSecret))
	dataDir := t.TempDir()
	body := []byte(`{"action":"published","release":{"tag_name":"v1.2.0","html_url":"https://github.com/o/r/releases/v1.2.0"}}`)
	mac := hmac.New(sha256.New, []byte(ghSecret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	post := func(p *proc, delivery string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/gh"), strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "release")
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("delivery %s: status %d %v", delivery, resp.StatusCode, out)
		}
		return out
	}
	p := startServeAt(t, cfg, dataDir)
	if out := post(p, "a1b2c3d4-original"); out["duplicate"] != false {
		t.Fatalf("first delivery: %v", out)
	}
	eventually(t, "the release is delivered", func() bool { return len(rcv.deliveries()) == 1 })
	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	p = startServeAt(t, cfg, dataDir)
	if out := post(p, "e5f6a7b8-replayed"); out["duplicate"] != true || out["id"] != "e5f6a7b8-replayed" {
		t.Errorf("replay under a new delivery id after a restart: %v", out)
	}
	time.Sleep(time.Second)
	if n := len(rcv.deliveries()); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}
