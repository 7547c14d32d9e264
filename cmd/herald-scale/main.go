// Command scale measures one herald process with many config-declared
// tasks on the embedded store (docs/scale.md, Scale): start to /healthz, the
// first baselines, a stop in the middle of them, a restart, idle CPU over
// a minute, resident memory and the time of the first page of
// `herald tasks list`. Feeds are served on loopback ports by this
// process; everything stays on 127.0.0.1. It runs a bounded time.
//
//	go run ./cmd/herald-scale -n 100000
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 100000, "config-declared tasks")
	ports := flag.Int("ports", 16, "loopback feed servers")
	bin := flag.String("bin", "bin/herald", "the herald binary")
	dir := flag.String("dir", "", "work dir (default: a new temporary one)")
	listen := flag.String("listen", "127.0.0.1:18480", "herald's listener")
	stopAfter := flag.Duration("stop-after", 20*time.Second, "SIGTERM this long into the first baselines")
	baselineWait := flag.Duration("baseline-wait", 8*time.Minute, "wait at most this long for every baseline after the restart")
	idle := flag.Duration("idle", time.Minute, "idle CPU window")
	runs := flag.Int("concurrent-runs", 64, "policy.limits.concurrent_runs")
	genOnly := flag.Bool("gen-only", false, "write the config and exit")
	flag.Parse()
	if err := run(*n, *ports, *bin, *dir, *listen, *stopAfter, *baselineWait, *idle, *runs, *genOnly); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// feeds serves one small RSS document on each of several loopback ports,
// with an ETag so that a check of an unchanged feed costs a 304.
type feeds struct {
	addrs         []string
	full, revalid atomic.Int64
	first         atomic.Int64 // unix nanoseconds of the first request
}

const feedDoc = `<?xml version="1.0"?><rss version="2.0"><channel><title>bench</title>
<item><title>One</title><link>https://example.org/1</link><guid>g1</guid></item>
<item><title>Two</title><link>https://example.org/2</link><guid>g2</guid></item>
<item><title>Three</title><link>https://example.org/3</link><guid>g3</guid></item></channel></rss>`

func startFeeds(n int) (*feeds, error) {
	f := &feeds{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.first.CompareAndSwap(0, time.Now().UnixNano())
		if r.Header.Get("If-None-Match") == `"b1"` {
			f.revalid.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		f.full.Add(1)
		w.Header().Set("ETag", `"b1"`)
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write([]byte(feedDoc))
	})
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		f.addrs = append(f.addrs, ln.Addr().String())
		go func() { _ = http.Serve(ln, h) }()
	}
	return f, nil
}

func (f *feeds) seen() int64 { return f.full.Load() + f.revalid.Load() }

func writeConfig(path, listen string, f *feeds, n, runs int) error {
	w, err := os.Create(path)
	if err != nil {
		return err
	}
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `server: {listen: %q}
channels: {telegram: {enabled: false}, feishu: {enabled: false}}
policy:
  admins: ["console:admin"]
  allow_private_networks: true
  limits: {max_tasks: %d, concurrent_runs: %d, per_host: {concurrency: 64, per_minute: 60000}}
tasks:
`, listen, max(n, 10000), runs)
	for i := range n {
		fmt.Fprintf(b, "  - {id: s%06d, source: {kind: rss, url: \"http://%s/f/%d.xml\"}, schedule: every 1h, notify: [\"inbox:console:admin\"]}\n",
			i, f.addrs[i%len(f.addrs)], i)
	}
	if err := b.Flush(); err != nil {
		return err
	}
	return w.Close()
}

type herald struct {
	cmd  *exec.Cmd
	done chan error
}

func startHerald(bin, cfg, data string) (*herald, error) {
	cmd := exec.Command(bin, "serve", "--config", cfg, "--data-dir", data)
	cmd.Env = append(os.Environ(), "HERALD_LOG_LEVEL=warn")
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(cfg), "herald.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &herald{cmd: cmd, done: make(chan error, 1)}
	go func() { h.done <- cmd.Wait(); logf.Close() }()
	return h, nil
}

// healthy waits for /healthz and returns how long it took from start.
func (h *herald) healthy(listen string, start time.Time, limit time.Duration) (time.Duration, error) {
	c := &http.Client{Timeout: time.Second}
	for time.Since(start) < limit {
		select {
		case err := <-h.done:
			return 0, fmt.Errorf("herald exited: %v", err)
		default:
		}
		if resp, err := c.Get("http://" + listen + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start), nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, errors.New("no /healthz in time")
}

// stop sends SIGTERM and returns how long herald took to exit.
func (h *herald) stop(limit time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
		return time.Since(start), nil
	case <-time.After(limit):
		_ = h.cmd.Process.Kill()
		<-h.done
		return time.Since(start), errors.New("did not exit in time; killed")
	}
}

// cpu returns the process's user+system CPU time so far.
func cpu(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ
}

// rss returns the resident set in MiB.
func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// heap returns the Go heap in use, from /metrics, in MiB.
func heap(listen string) float64 {
	resp, err := http.Get("http://" + listen + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f / (1 << 20)
		}
	}
	return 0
}

func firstPage(bin, data string) (time.Duration, int, error) {
	start := time.Now()
	out, err := exec.Command(bin, "tasks", "list", "--limit", "100", "--data-dir", data).Output()
	took := time.Since(start)
	return took, strings.Count(string(out), "\n") - 1, err
}

func run(n, ports int, bin, dir, listen string, stopAfter, baselineWait, idle time.Duration, runs int, genOnly bool) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "herald-scale-")
		if err != nil {
			return err
		}
		dir = d
		defer os.RemoveAll(d)
	}
	f, err := startFeeds(ports)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg, data := filepath.Join(dir, "herald.yaml"), filepath.Join(dir, "data")
	if err := writeConfig(cfg, listen, f, n, runs); err != nil {
		return err
	}
	if genOnly {
		fmt.Println(cfg)
		return nil
	}
	report := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	report("tasks %d, feeds on %d loopback ports, concurrent_runs %d, dir %s", n, ports, runs, dir)

	// First start: every task owes its baseline.
	start := time.Now()
	h, err := startHerald(bin, cfg, data)
	if err != nil {
		return err
	}
	up, err := h.healthy(listen, start, 10*time.Minute)
	if err != nil {
		return err
	}
	report("first start → /healthz: %.2f s (RSS %.0f MiB)", up.Seconds(), rss(h.cmd.Process.Pid))
	for f.first.Load() == 0 && time.Since(start) < 10*time.Minute {
		time.Sleep(20 * time.Millisecond)
	}
	report("first start → first check (owning scheduling, every task planned): %.2f s", time.Duration(f.first.Load()-start.UnixNano()).Seconds())
	time.Sleep(stopAfter)
	fetched := f.seen()
	report("baselines fetched in the first %s after /healthz: %d (%.0f/s), RSS %.0f MiB", stopAfter, fetched, float64(fetched)/stopAfter.Seconds(), rss(h.cmd.Process.Pid))
	took, err := h.stop(time.Minute)
	report("SIGTERM during the baselines → exit: %.2f s (%v)", took.Seconds(), err)

	// Restart: the baselines still owed are checked once each (I4).
	start = time.Now()
	h, err = startHerald(bin, cfg, data)
	if err != nil {
		return err
	}
	up, err = h.healthy(listen, start, 10*time.Minute)
	if err != nil {
		return err
	}
	report("restart → /healthz: %.2f s", up.Seconds())
	deadline := time.Now().Add(baselineWait)
	for f.seen() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	report("feed requests so far: %d for %d tasks, %.0f s after the restart (200: %d, 304: %d)",
		f.seen(), n, time.Since(start).Seconds(), f.full.Load(), f.revalid.Load())
	time.Sleep(5 * time.Second) // let the last commits and notices settle
	pid := h.cmd.Process.Pid
	c0, _ := cpu(pid)
	before := f.seen()
	time.Sleep(idle)
	c1, _ := cpu(pid)
	report("idle CPU over %s: %.2f s (%.2f%% of a core), feed requests meanwhile %d", idle, (c1 - c0).Seconds(), 100*(c1-c0).Seconds()/idle.Seconds(), f.seen()-before)
	hp := heap(listen)
	report("idle memory: RSS %.0f MiB (%.1f KiB per task, the store's mapped pages included), Go heap in use %.0f MiB (%.1f KiB per task)",
		rss(pid), rss(pid)*1024/float64(n), hp, hp*1024/float64(n))
	lt, rows, err := firstPage(bin, data)
	report("tasks list --limit 100: %.3f s, %d rows (%v)", lt.Seconds(), rows, err)
	took, err = h.stop(time.Minute)
	report("SIGTERM when idle → exit: %.2f s (%v)", took.Seconds(), err)
	return nil
}
