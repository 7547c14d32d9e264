package main

// Multi-process tests: several real `herald serve` processes sharing one
// Redis. They need a Redis server (HERALD_TEST_REDIS_URL, e.g.
// redis://127.0.0.1:6379/0); without one they skip, except in CI where
// they must run. Each test uses its own key prefix and removes its keys
// when it ends; the shared Redis server itself is never stopped — an
// outage is a TCP proxy in front of it that the test cuts and restores.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store/datadir"
	"github.com/herald-bridge/herald/store/redis/redistest"
	"github.com/herald-bridge/herald/webhook/signature"
)

// leaseTTL is the scheduling lease lifetime herald serve uses (tasks
// default); an owner that dies is replaced within it plus one retry period.
const leaseTTL = 15 * time.Second

// replicaRedisURL is the Redis the replica tests share.
func replicaRedisURL(t *testing.T) string { return redistest.URL(t) }

var replicaBuild struct {
	once sync.Once
	path string
	err  error
}

// replicaBinary returns the herald binary under test: the one the
// package's TestMain built, else one built here once per test binary, at a
// stable path so that repeated runs reuse one file and the build cache.
func replicaBinary(t *testing.T) string {
	t.Helper()
	if heraldBin != "" {
		return heraldBin
	}
	replicaBuild.once.Do(func() {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("herald-replica-test-%d", os.Getuid()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			replicaBuild.err = err
			return
		}
		out := filepath.Join(dir, "herald")
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			replicaBuild.err = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		replicaBuild.path = out
	})
	if replicaBuild.err != nil {
		t.Fatal(replicaBuild.err)
	}
	return replicaBuild.path
}

// replicaPrefix returns a key prefix of this test alone and deletes its
// keys (plain and hash-tagged) when the test ends.
func replicaPrefix(t *testing.T, redisURL string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "herald-rtest:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		opt, err := goredis.ParseURL(redisURL)
		if err != nil {
			t.Error(err)
			return
		}
		rdb := goredis.NewClient(opt)
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, pat := range []string{prefix + "*", "{" + prefix + "}*"} {
			iter := rdb.Scan(ctx, 0, pat, 500).Iterator()
			var keys []string
			for iter.Next(ctx) {
				keys = append(keys, iter.Val())
			}
			if len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
		}
	})
	return prefix
}

func newSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// ---------------------------------------------------------------- the sink

// countingSink is the webhook recipient: a Standard Webhooks receiver that
// checks the signature, counts arrivals by webhook-id and answers one
// request at a time, each after delay, so delivery takes a while.
type countingSink struct {
	srv   *httptest.Server
	key   []byte
	delay time.Duration
	serve sync.Mutex // one request at a time

	gateMu sync.Mutex
	gate   chan struct{} // requests wait here while it is open (not closed)

	mu       sync.Mutex
	arrivals map[string]int
	total    int
	badSig   int
}

func newCountingSink(t *testing.T, secret string, delay time.Duration) *countingSink {
	t.Helper()
	key, err := signature.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	s := &countingSink{key: key, delay: delay, arrivals: map[string]int{}, gate: make(chan struct{})}
	close(s.gate)
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *countingSink) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	id := r.Header.Get("webhook-id")
	ok := signature.Verify([][]byte{s.key}, id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body, time.Now(), 5*time.Minute) == nil
	s.mu.Lock()
	if !ok {
		s.badSig++
	}
	s.arrivals[id]++
	s.total++
	s.mu.Unlock()
	if !ok {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	s.gateMu.Lock()
	gate := s.gate
	s.gateMu.Unlock()
	<-gate
	s.serve.Lock()
	time.Sleep(s.delay) // the receiver's own work; not a test timing
	s.serve.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// hold makes requests wait after they are counted, until release.
func (s *countingSink) hold() {
	s.gateMu.Lock()
	s.gate = make(chan struct{})
	s.gateMu.Unlock()
}

// release lets held and later requests through.
func (s *countingSink) release() {
	s.gateMu.Lock()
	close(s.gate)
	s.gateMu.Unlock()
}

func (s *countingSink) snapshot() (map[string]int, int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.arrivals))
	for k, v := range s.arrivals {
		m[k] = v
	}
	return m, s.total, s.badSig
}

func (s *countingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// ---------------------------------------------------------------- the proxy

// redisProxy forwards TCP to Redis until cut: a cut closes every open
// connection and closes each new one at once, as a Redis that went away
// would; restore forwards again.
type redisProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func newRedisProxy(t *testing.T, target string) *redisProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

func (p *redisProxy) Addr() string { return p.ln.Addr().String() }

func (p *redisProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		go p.pipe(c)
	}
}

func (p *redisProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Cut makes Redis unreachable through the proxy.
func (p *redisProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore makes Redis reachable again.
func (p *redisProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// ---------------------------------------------------------------- replicas

// replicaEnv is what the replicas of one test share.
type replicaEnv struct {
	bin        string
	redisURL   string
	prefix     string
	sinkURL    string
	sinkSecret string
	hookSecret string
	hookKey    []byte
	// shards and leaseTTL configure the scheduling shards (default: one
	// shard, one owner, 15 s); tasks is YAML appended to the config.
	shards   int
	leaseTTL string
	tasks    string
}

func newReplicaEnv(t *testing.T, redisURL string, sink *countingSink, sinkSecret string) *replicaEnv {
	t.Helper()
	hookSecret := newSecret()
	key, err := signature.ParseSecret(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	return &replicaEnv{
		bin: replicaBinary(t), redisURL: redisURL, prefix: replicaPrefix(t, replicaRedisURL(t)),
		sinkURL: sink.srv.URL + "/herald", sinkSecret: sinkSecret, hookSecret: hookSecret, hookKey: key,
	}
}

// storedAttempt is one attempt as the ledger holds it.
type storedAttempt struct {
	Start, End time.Time
	By, Error  string
}

// attempts reads an effect's recorded attempts straight from Redis: the
// CLI view does not show which worker made them.
func (e *replicaEnv) attempts(t *testing.T, key string) []storedAttempt {
	t.Helper()
	opt, err := goredis.ParseURL(replicaRedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	raw, err := rdb.Get(context.Background(), "{"+e.prefix+"}fx:e:"+key).Bytes()
	if err != nil {
		t.Fatalf("read effect %s: %v", key, err)
	}
	var stored struct {
		Attempts []storedAttempt `json:"attempts"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatalf("decode effect %s: %v", key, err)
	}
	return stored.Attempts
}

// queued is the number of effects waiting in the delivery queue (not in
// flight), read straight from Redis.
func (e *replicaEnv) queued(t *testing.T) int64 {
	t.Helper()
	opt, err := goredis.ParseURL(replicaRedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	n, err := rdb.ZCard(context.Background(), "{"+e.prefix+"}q").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// replica is one running `herald serve`.
type replica struct {
	name    string
	dataDir string
	config  string
	cmd     *exec.Cmd
	log     *os.File
	addr    string
	exited  chan struct{}
}

var replicaConfig = localService("127.0.0.1:0") + `store:
  driver: redis
  redis: {url: %q, key_prefix: %q, shards: %d, lease_ttl: %s}
recipients:
  sink:
    # The receiver holds requests while a test kills the owner; a busy
    # machine must not turn the survivors' held attempts into timeouts.
    webhook: {url: %q, secret: %q, idempotent: false, timeout: 90s}
inbound:
  ci:
    format: standard
    secret: %q
    route: [sink]
`

func (e *replicaEnv) start(t *testing.T, name string) *replica {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "herald.yaml")
	shards, ttl := e.shards, e.leaseTTL
	if shards == 0 {
		shards = 1
	}
	if ttl == "" {
		ttl = leaseTTL.String()
	}
	body := fmt.Sprintf(replicaConfig, e.redisURL, e.prefix, shards, ttl, e.sinkURL, e.sinkSecret, e.hookSecret) + e.tasks
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, dataDir: filepath.Join(dir, "data"), config: cfg, log: logf, exited: make(chan struct{})}
	r.cmd = exec.Command(e.bin, "serve", "--config", cfg, "--data-dir", r.dataDir)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.Env = append(os.Environ(), "HERALD_LOG_LEVEL=info")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		r.stop()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("---- %s log, without access lines (last 8 KiB) ----\n%s", name, tail(withoutAccess(b), 8192))
		}
	})
	// The admin record appears once the listener is up.
	waitFor(t, 20*time.Second, name+" to listen", func() bool {
		select {
		case <-r.exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("%s exited at start:\n%s", name, tail(b, 4096))
		default:
		}
		rec, err := datadir.ReadAdmin(r.dataDir)
		if err != nil || rec.PID != r.cmd.Process.Pid {
			return false
		}
		r.addr = rec.Addr
		return true
	})
	return r
}

// withoutAccess drops the HTTP server's per-request lines from a log.
func withoutAccess(b []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"component":"http"`)) {
			out.Write(line)
		}
	}
	return out.Bytes()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// kill ends the process with SIGKILL: no drain, no lease release.
func (r *replica) kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}

func (r *replica) stop() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		r.kill()
	}
}

func (r *replica) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

var replicaHTTP = &http.Client{Timeout: 30 * time.Second}

// readyz returns /readyz's status code and detail.
func (r *replica) readyz() (int, map[string]any) {
	resp, err := replicaHTTP.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var detail map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&detail)
	return resp.StatusCode, detail
}

// metric returns the value of an unlabelled series on /metrics.
func (r *replica) metric(name string) (float64, bool) {
	resp, err := replicaHTTP.Get("http://" + r.addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f, true
			}
		}
	}
	return 0, false
}

// cli runs the herald CLI against this replica's data dir.
func (r *replica) cli(bin string, args ...string) ([]byte, error) {
	args = append(args, "--data-dir", r.dataDir, "--config", r.config)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("herald %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// status is `herald status --json`.
func (r *replica) status(bin string) (statusView, error) {
	var st statusView
	out, err := r.cli(bin, "status", "--json")
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(out, &st)
}

// ledger is `herald ledger show hook:ci --json`.
func (r *replica) ledger(bin string) ([]effectView, error) {
	var fxs []effectView
	out, err := r.cli(bin, "ledger", "show", "hook:ci", "--json", "--limit", "100000")
	if err != nil {
		return nil, err
	}
	return fxs, json.Unmarshal(out, &fxs)
}

// post sends one signed inbound event and returns the status code (0 on a
// transport error).
func (e *replicaEnv) post(r *replica, id string) int {
	body := []byte(fmt.Sprintf(`{"title":"build %s finished","url":"https://ci.example.com/b/%s"}`, id, id))
	now := time.Now()
	req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/hooks/ci", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", fmt.Sprint(now.Unix()))
	req.Header.Set("webhook-signature", signature.Sign(e.hookKey, id, now, body))
	resp, err := replicaHTTP.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond until it holds or limit passes. It is a wait on real
// processes, not a timing assertion: limit is generous.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// owners returns the replicas that report owning scheduling.
func owners(t *testing.T, bin string, rs []*replica) []*replica {
	t.Helper()
	var out []*replica
	for _, r := range rs {
		if !r.alive() {
			continue
		}
		st, err := r.status(bin)
		if err != nil {
			t.Logf("%s: %v", r.name, err)
			continue
		}
		if st.Owner {
			out = append(out, r)
		}
	}
	return out
}

// settled reports whether no effect is pending, with the ledger.
func settled(t *testing.T, bin string, r *replica, want int) ([]effectView, bool) {
	t.Helper()
	fxs, err := r.ledger(bin)
	if err != nil {
		t.Logf("%s: %v", r.name, err)
		return nil, false
	}
	if len(fxs) < want {
		return fxs, false
	}
	for _, fx := range fxs {
		if fx.State == "pending" {
			return fxs, false
		}
	}
	return fxs, true
}

// waitSettled waits until the ledger holds want effects and none is
// pending; an interrupted attempt is settled by recovery within two lease
// periods.
func waitSettled(t *testing.T, bin string, r *replica, want int) []effectView {
	t.Helper()
	limit := 2*leaseTTL + 30*time.Second
	start := time.Now()
	for {
		fxs, ok := settled(t, bin, r, want)
		if ok {
			return fxs
		}
		if time.Since(start) > limit {
			t.Fatalf("after %v the ledger holds %d effects (want %d), still pending:%s", limit, len(fxs), want, pendingOf(fxs))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pendingOf lists the effects still pending, for a failure message.
func pendingOf(fxs []effectView) string {
	var b strings.Builder
	for _, fx := range fxs {
		if fx.State == "pending" {
			fmt.Fprintf(&b, "\n  %s attempts=%d error=%q updated=%s", fx.Key, fx.Attempts, fx.Error, fx.UpdatedAt.Format(time.RFC3339Nano))
		}
	}
	return b.String()
}

// ---------------------------------------------------------------- tests

// TestI5_ThreeReplicasOneOwnerFailoverNoDuplicates runs three replicas on
// one Redis prefix: one owns scheduling; all deliver. Killing the owner
// with SIGKILL while pushes are in flight hands ownership to another
// replica within a lease TTL; every push ends delivered exactly once or
// unknown (I3), and no webhook-id reaches the receiver twice (I1).
func TestI5_ThreeReplicasOneOwnerFailoverNoDuplicates(t *testing.T) {
	redisURL := replicaRedisURL(t)
	sinkSecret := newSecret()
	sink := newCountingSink(t, sinkSecret, 20*time.Millisecond)
	env := newReplicaEnv(t, redisURL, sink, sinkSecret)
	bin := env.bin

	rs := []*replica{env.start(t, "a"), env.start(t, "b"), env.start(t, "c")}
	var owner *replica
	waitFor(t, leaseTTL+10*time.Second, "exactly one owner", func() bool {
		o := owners(t, bin, rs)
		if len(o) > 1 {
			t.Fatalf("%d replicas report owning scheduling", len(o))
		}
		if len(o) == 1 {
			owner = o[0]
		}
		return owner != nil
	})
	for _, r := range rs {
		code, detail := r.readyz()
		if code != http.StatusOK {
			t.Fatalf("%s /readyz = %d %v", r.name, code, detail)
		}
		want := "another replica"
		if r == owner {
			want = "this replica"
		}
		if s, _ := detail["owner"].(string); !strings.HasPrefix(s, want) {
			t.Errorf("%s /readyz owner = %q, want %q…", r.name, s, want)
		}
	}
	t.Logf("owner: %s", owner.name)

	// Queue more pushes, through all three replicas, than their workers
	// can hold in flight (64 each), while the receiver holds every request
	// it gets: the owner dies with attempts in flight and work queued.
	const n = 400
	sink.hold()
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("evt-%04d", i)
				if code := env.post(rs[i%len(rs)], id); code == http.StatusAccepted {
					accepted.Add(1)
				} else {
					t.Errorf("post %s: %d, want 202", id, code)
				}
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != n {
		t.Fatalf("%d of %d posts accepted", accepted.Load(), n)
	}

	// Kill the owner mid-delivery.
	waitFor(t, 30*time.Second, "delivery to be under way", func() bool { return sink.count() >= 20 })
	st, err := owner.status(bin)
	if err != nil {
		t.Fatal(err)
	}
	killedHolder := st.Holder
	owner.kill()
	killedAt := time.Now()
	queued := env.queued(t)
	t.Logf("killed owner %s with %d requests at the receiver and %d pushes queued", owner.name, sink.count(), queued)
	sink.release()
	if queued == 0 {
		t.Error("nothing was queued when the owner died; the test did not exercise queued work")
	}
	var rest []*replica
	for _, r := range rs {
		if r != owner {
			rest = append(rest, r)
		}
	}
	// Until the dead owner's lease runs out nobody schedules, but the
	// standbys stay ready and keep accepting and delivering events.
	const gap = 10
	for i := range gap {
		r := rest[i%len(rest)]
		if code, detail := r.readyz(); code != http.StatusOK {
			t.Errorf("%s /readyz during takeover = %d %v, want 200", r.name, code, detail)
		}
		if code := env.post(r, fmt.Sprintf("gap-%02d", i)); code != http.StatusAccepted {
			t.Errorf("post to %s during takeover: %d, want 202", r.name, code)
		}
	}
	var next *replica
	waitFor(t, leaseTTL+leaseTTL/3+5*time.Second, "a new owner", func() bool {
		o := owners(t, bin, rest)
		if len(o) > 1 {
			t.Fatalf("%d replicas report owning scheduling", len(o))
		}
		if len(o) == 1 {
			next = o[0]
		}
		return next != nil
	})
	t.Logf("new owner %s after %v", next.name, time.Since(killedAt).Round(100*time.Millisecond))
	for _, r := range rest {
		r.readyz() // publishes the ownership gauge now rather than at the next renewal
		want := 0.0
		if r == next {
			want = 1
		}
		if got, ok := r.metric("herald_scheduler_owner"); !ok || got != want {
			t.Errorf("%s herald_scheduler_owner = %v (found %v), want %v", r.name, got, ok, want)
		}
	}

	fxs := waitSettled(t, bin, next, n+gap)
	arrivals, total, bad := sink.snapshot()
	if bad > 0 {
		t.Errorf("%d arrivals with a bad signature", bad)
	}
	if len(fxs) != n+gap {
		t.Fatalf("ledger holds %d effects, want %d", len(fxs), n+gap)
	}
	var delivered, unknown, dups, unsentUnknown int
	keys := map[string]bool{}
	for _, fx := range fxs {
		keys[fx.Key] = true
		got := arrivals[fx.Key]
		if got > 1 {
			dups++
			t.Errorf("effect %s arrived %d times", fx.Key, got)
		}
		switch fx.State {
		case "completed":
			delivered++
			if got != 1 {
				t.Errorf("effect %s completed but arrived %d times", fx.Key, got)
			}
		case "unknown":
			unknown++
			if got == 0 {
				unsentUnknown++
			}
			if fx.Attempts != 1 {
				t.Errorf("unknown effect %s has %d attempts; unknown is never replayed", fx.Key, fx.Attempts)
			}
		default:
			t.Errorf("effect %s ended %s (%s)", fx.Key, fx.State, fx.Error)
		}
	}
	for id := range arrivals {
		if !keys[id] {
			t.Errorf("webhook-id %s arrived without a ledger claim", id)
		}
	}
	t.Logf("effects %d: delivered %d, unknown %d (of which never reached the receiver %d), duplicates %d; receiver saw %d requests",
		len(fxs), delivered, unknown, unsentUnknown, dups, total)
	// Only the killed owner's attempts were interrupted; the survivors
	// settled every attempt they began.
	for _, fx := range fxs {
		if fx.State != "unknown" {
			continue
		}
		as := env.attempts(t, fx.Key)
		if len(as) == 0 || as[len(as)-1].By != killedHolder {
			t.Errorf("unknown effect %s: attempts %+v, want one begun by the killed owner %s", fx.Key, as, killedHolder)
		}
	}
	if delivered+unknown != n+gap {
		t.Errorf("delivered %d + unknown %d != %d", delivered, unknown, n+gap)
	}
}

// TestRedisOutageNoPushWithoutClaim cuts one replica's Redis for 5 s while
// events arrive and pushes go out: /readyz says 503, inbound posts get 503
// (never 202 without a durable claim), nothing reaches the receiver
// without a ledger claim (I1), and afterwards the sender's retries of what
// was refused are accepted and everything claimed is delivered once.
func TestRedisOutageNoPushWithoutClaim(t *testing.T) {
	redisURL := replicaRedisURL(t)
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newRedisProxy(t, u.Host)
	pu := *u
	pu.Host = proxy.Addr()

	sinkSecret := newSecret()
	sink := newCountingSink(t, sinkSecret, 20*time.Millisecond)
	env := newReplicaEnv(t, pu.String(), sink, sinkSecret)
	bin := env.bin
	r := env.start(t, "solo")
	waitFor(t, 20*time.Second, "ready", func() bool { code, _ := r.readyz(); return code == http.StatusOK })

	type post struct {
		id         string
		start, end time.Time
		code       int
	}
	var (
		mu    sync.Mutex
		posts []post
		stop  = make(chan struct{})
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := post{id: fmt.Sprintf("out-%04d", i), start: time.Now()}
			p.code = env.post(r, p.id)
			p.end = time.Now()
			mu.Lock()
			posts = append(posts, p)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // pacing of the event source
		}
	}()

	waitFor(t, 30*time.Second, "delivery to be under way", func() bool { return sink.count() >= 10 })
	proxy.Cut()
	cutAt := time.Now()
	var outageReady []int
	for time.Since(cutAt) < 5*time.Second {
		code, _ := r.readyz()
		outageReady = append(outageReady, code)
		time.Sleep(250 * time.Millisecond)
	}
	proxy.Restore()
	restoredAt := time.Now()
	for i, code := range outageReady {
		if i == 0 {
			continue // may have raced the cut
		}
		if code != http.StatusServiceUnavailable {
			t.Errorf("/readyz during the outage = %d, want 503", code)
		}
	}
	waitFor(t, leaseTTL+10*time.Second, "ready again", func() bool { code, _ := r.readyz(); return code == http.StatusOK })
	// Keep events coming for a while after recovery, then stop.
	time.Sleep(2 * time.Second) // more traffic after recovery, not a timing assertion
	close(stop)
	<-done

	mu.Lock()
	all := append([]post(nil), posts...)
	mu.Unlock()
	claimed := map[string]bool{}
	var during, duringRefused, after, afterAccepted int
	for _, p := range all {
		if p.code == http.StatusAccepted {
			claimed[p.id] = true
		}
		switch {
		case p.start.After(cutAt) && p.end.Before(restoredAt):
			during++
			if p.code == http.StatusAccepted {
				t.Errorf("post %s during the outage got 202", p.id)
			}
			if p.code == http.StatusServiceUnavailable {
				duringRefused++
			} else {
				t.Errorf("post %s during the outage got %d, want 503", p.id, p.code)
			}
		case p.start.After(restoredAt.Add(time.Second)):
			after++
			if p.code == http.StatusAccepted {
				afterAccepted++
			} else {
				t.Errorf("post %s after recovery got %d, want 202", p.id, p.code)
			}
		}
	}
	if during == 0 || after == 0 {
		t.Fatalf("posts during the outage %d, after recovery %d: both must be exercised", during, after)
	}
	// A sender retries what was refused. A post that was in flight at the
	// cut may have been claimed although its answer was lost (503): its
	// retry is accepted as a repeat, and it is still pushed once.
	var retried int
	for _, p := range all {
		if claimed[p.id] {
			continue
		}
		retried++
		if code := env.post(r, p.id); code != http.StatusAccepted {
			t.Errorf("retry of refused post %s got %d, want 202", p.id, code)
			continue
		}
		claimed[p.id] = true
	}

	fxs := waitSettled(t, bin, r, len(claimed))
	arrivals, total, bad := sink.snapshot()
	if bad > 0 {
		t.Errorf("%d arrivals with a bad signature", bad)
	}
	keys := map[string]effectView{}
	var completed, unknown int
	for _, fx := range fxs {
		keys[fx.Key] = fx
		switch fx.State {
		case "completed":
			completed++
		case "unknown":
			unknown++
		}
		if fx.State != "completed" {
			t.Errorf("effect %s ended %s (%s), want completed", fx.Key, fx.State, fx.Error)
		}
	}
	var dups int
	for id, n := range arrivals {
		if _, ok := keys[id]; !ok {
			t.Errorf("webhook-id %s reached the receiver without a ledger claim", id)
		}
		if n > 1 {
			dups++
			t.Errorf("webhook-id %s arrived %d times", id, n)
		}
	}
	if len(fxs) != len(claimed) {
		t.Errorf("ledger holds %d effects, %d posts were accepted", len(fxs), len(claimed))
	}
	for _, fx := range fxs {
		if arrivals[fx.Key] == 0 {
			t.Errorf("effect %s never reached the receiver", fx.Key)
		}
	}
	t.Logf("posts %d (during outage %d, all refused: %v; after %d, accepted %d; refused and sent again %d); effects %d: completed %d, unknown %d; receiver saw %d requests, duplicates %d",
		len(all), during, during == duringRefused, after, afterAccepted, retried, len(fxs), completed, unknown, total, dups)
	if len(fxs) == 0 {
		t.Fatal("no effects were claimed")
	}
}

// TestI3_KilledStandbyAttemptsBecomeUnknown kills a replica that does not
// own scheduling while its delivery workers have attempts in flight: the
// owner settles them unknown once the standby's worker lease lapses (it
// recovers the ledger after every lease renewal), as it does for a dead
// owner's at takeover.
func TestI3_KilledStandbyAttemptsBecomeUnknown(t *testing.T) {
	redisURL := replicaRedisURL(t)
	sinkSecret := newSecret()
	sink := newCountingSink(t, sinkSecret, 5*time.Millisecond)
	env := newReplicaEnv(t, redisURL, sink, sinkSecret)
	bin := env.bin
	rs := []*replica{env.start(t, "a"), env.start(t, "b")}
	var owner *replica
	waitFor(t, leaseTTL+10*time.Second, "an owner", func() bool {
		if o := owners(t, bin, rs); len(o) == 1 {
			owner = o[0]
		}
		return owner != nil
	})
	standby := rs[0]
	if standby == owner {
		standby = rs[1]
	}
	st, err := standby.status(bin)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	sink.hold()
	for i := range n {
		if code := env.post(rs[i%2], fmt.Sprintf("sb-%04d", i)); code != http.StatusAccepted {
			t.Fatalf("post %d: %d", i, code)
		}
	}
	waitFor(t, 30*time.Second, "both replicas' workers at the receiver", func() bool { return sink.count() >= 100 })
	standby.kill()
	sink.release()
	fxs := waitSettled(t, bin, owner, n)
	var unknown int
	for _, fx := range fxs {
		if fx.State != "unknown" {
			continue
		}
		unknown++
		if as := env.attempts(t, fx.Key); len(as) == 0 || as[len(as)-1].By != st.Holder {
			t.Errorf("unknown effect %s was not the killed standby's attempt: %+v", fx.Key, as)
		}
	}
	if unknown == 0 {
		t.Error("no attempt of the killed standby was settled unknown")
	}
	t.Logf("effects %d: unknown %d (the standby's in-flight attempts)", len(fxs), unknown)
}
