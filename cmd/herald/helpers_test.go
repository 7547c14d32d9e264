package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// heraldBin is the binary under test, built once per package run.
var heraldBin string

// stateHome is XDG_STATE_HOME for every subprocess.
var stateHome string

// Bounds for waiting on the subprocess. They are ceilings on how long a
// broken build may hang a test, not durations any test measures.
const (
	startBound = 20 * time.Second
	exitBound  = 5 * time.Second
	pollEvery  = 25 * time.Millisecond
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	heraldBin = filepath.Join(dir, "herald")
	// Services started by tests remember their data dir here, not in the
	// real per-user state dir.
	stateHome = filepath.Join(dir, "state")
	build := exec.Command("go", "build", "-o", heraldBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build herald:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	stopChromium()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// childEnv is the environment of every subprocess: the test's own, minus
// anything that would switch on a real channel or point at another data
// dir or config, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HERALD_") || strings.HasPrefix(k, "TELEGRAM_") || strings.HasPrefix(k, "FEISHU_") || k == "XDG_STATE_HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "XDG_STATE_HOME="+stateHome), extra...)
}

// syncBuffer collects a subprocess's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running `herald serve`.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	log     *syncBuffer
	done    chan struct{}
	code    int
	addr    string
	cfgPath string
	dataDir string
}

// exited reports whether the process has ended, and its exit code.
func (p *proc) exited() (bool, int) {
	select {
	case <-p.done:
		return true, p.code
	default:
		return false, 0
	}
}

// signal sends sig and waits (bounded) for the exit code.
func (p *proc) signal(sig syscall.Signal) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.done:
		return p.code
	case <-time.After(exitBound):
		p.t.Fatalf("herald serve did not exit within %v of %v\nlog:\n%s", exitBound, sig, p.log.String())
		return -1
	}
}

// url returns http://addr + path.
func (p *proc) url(path string) string { return "http://" + p.addr + path }

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// writeConfig writes yaml to a fresh file and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "herald.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startServe starts `herald serve` on cfgYAML with a fresh data dir and
// waits until /healthz answers. The process is killed at cleanup if the
// test left it running.
func startServe(t *testing.T, cfgYAML string, env ...string) (*proc, string) {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startServeAt(t, writeConfig(t, cfgYAML), dataDir, env...)
	return p, dataDir
}

// startServeAt starts `herald serve` on an existing config file and data dir.
func startServeAt(t *testing.T, cfgPath, dataDir string, env ...string) *proc {
	t.Helper()
	addr := listenOf(t, cfgPath)
	cmd := exec.Command(heraldBin, "serve", "--config", cfgPath, "--data-dir", dataDir)
	cmd.Env = childEnv(env...)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, log: log, done: make(chan struct{}), addr: addr, cfgPath: cfgPath, dataDir: dataDir}
	go func() {
		err := cmd.Wait()
		p.code = exitCode(err)
		close(p.done)
	}()
	t.Cleanup(func() {
		if ok, _ := p.exited(); !ok {
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("herald serve log:\n%s", log.String())
		}
	})
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startBound)
	for {
		if ok, code := p.exited(); ok {
			t.Fatalf("herald serve exited with %d before serving\nlog:\n%s", code, log.String())
		}
		if resp, err := hc.Get(p.url("/healthz")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("herald serve did not answer /healthz within %v\nlog:\n%s", startBound, log.String())
		}
		time.Sleep(pollEvery)
	}
	// The admin record is written before the listener serves; the CLI needs it.
	if _, err := os.Stat(filepath.Join(dataDir, "admin.json")); err != nil {
		t.Fatalf("serving without admin.json: %v", err)
	}
	return p
}

// listenOf reads server.listen from a config file written by these tests.
func listenOf(t *testing.T, cfgPath string) string {
	t.Helper()
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "listen:"); ok {
			v, _, _ = strings.Cut(v, "#")
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatalf("%s has no server.listen", cfgPath)
	return ""
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// cliLog records every CLI invocation's output so a test can check it
// as a whole (I10).
type cliLog struct {
	mu  sync.Mutex
	all strings.Builder
}

func (l *cliLog) add(s ...string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range s {
		l.all.WriteString(x)
		l.all.WriteByte('\n')
	}
}

func (l *cliLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// outputs collects CLI output per test.
var outputs sync.Map // *testing.T → *cliLog

func outputsOf(t *testing.T) *cliLog {
	v, _ := outputs.LoadOrStore(t, &cliLog{})
	return v.(*cliLog)
}

// run runs the CLI with args (stdin empty, not a terminal) and returns its
// stdout, stderr and exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runEnv(t, nil, args...)
}

// runEnv is run with env added to the subprocess's environment.
func runEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, args...)
	cmd.Env = childEnv(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := exitCode(err)
	if code == -1 {
		t.Fatalf("herald %s: %v", strings.Join(args, " "), err)
	}
	outputsOf(t).add(stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), code
}

// cli runs a CLI command against dataDir that must succeed, and returns stdout.
func cli(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, append(args, "--data-dir", dataDir)...)
	if code != 0 {
		t.Fatalf("herald %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// cliJSON runs a CLI command with --json and decodes its stdout into v,
// refusing fields v does not declare.
func cliJSON(t *testing.T, dataDir string, v any, args ...string) {
	t.Helper()
	out := cli(t, dataDir, append(args, "--json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("herald %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// keysOf decodes a JSON array of objects and returns each object's keys.
func keysOf(t *testing.T, out string) []map[string]json.RawMessage {
	t.Helper()
	var arr []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &arr); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, out)
	}
	return arr
}

// requireKeys checks that obj has exactly want as keys.
func requireKeys(t *testing.T, what string, obj map[string]json.RawMessage, want ...string) {
	t.Helper()
	if len(obj) != len(want) {
		t.Errorf("%s has keys %v, want exactly %v", what, mapKeys(obj), want)
	}
	for _, k := range want {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s lacks %q (has %v)", what, k, mapKeys(obj))
		}
	}
}

func mapKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// eventually polls cond until it holds or the start bound passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(startBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(pollEvery)
	}
}

// feed is an RSS feed served by the test from a podcast document; it can
// add an item and hold requests at a gate.
type feed struct {
	srv *httptest.Server

	mu    sync.Mutex
	doc   []byte
	gate  chan struct{} // non-nil: requests wait for it to close
	hit   chan struct{} // a request arrived at the gate
	count int
	// busy: requests are answered 503 with Retry-After: 120.
	busy bool
	// etag: the document carries an ETag, and a request that sends it
	// back is answered 304 Not Modified.
	etag bool
}

func newFeed(t *testing.T) *feed {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("testdata", "rss2-podcast-enclosures.xml"))
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{doc: doc}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/denied.xml" {
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		f.count++
		gate, hit, doc, busy, etag := f.gate, f.hit, f.doc, f.busy, f.etag
		f.mu.Unlock()
		if busy {
			w.Header().Set("Retry-After", "120")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if gate != nil {
			select {
			case hit <- struct{}{}:
			default:
			}
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		if etag {
			tag := fmt.Sprintf(`"%x"`, sha256.Sum256(doc))
			if r.Header.Get("If-None-Match") == tag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", tag)
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(func() {
		f.open()
		f.srv.Close()
	})
	return f
}

func (f *feed) url() string { return f.srv.URL + "/feed.xml" }

// addItem publishes one more item.
func (f *feed) addItem(guid, title string) {
	item := fmt.Sprintf("<item><title>%s</title><link>https://theomnishow.omnigroup.com/%s</link><guid>%s</guid></item>", title, guid, guid)
	f.mu.Lock()
	f.doc = bytes.Replace(f.doc, []byte("</channel>"), []byte(item+"</channel>"), 1)
	f.mu.Unlock()
}

// close makes new requests wait until open; it returns a channel that
// receives when one arrives.
func (f *feed) close() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate, f.hit = make(chan struct{}), make(chan struct{}, 1)
	return f.hit
}

// setBusy makes the feed answer 503 with Retry-After: 120, or not.
func (f *feed) setBusy(busy bool) {
	f.mu.Lock()
	f.busy = busy
	f.mu.Unlock()
}

// open releases waiting requests.
func (f *feed) open() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate != nil {
		close(f.gate)
		f.gate = nil
	}
}

// receiver is an outbound webhook endpoint speaking Standard Webhooks.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []http.Header
	hold chan struct{} // non-nil: requests are answered when it closes
	hit  chan struct{}
}

// holdAll makes requests wait until the receiver closes; the returned
// channel receives when one arrives.
func (rc *receiver) holdAll() <-chan struct{} {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.hold, rc.hit = make(chan struct{}), make(chan struct{}, 1)
	return rc.hit
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, r.Header.Clone())
		hold, hit := rc.hold, rc.hit
		rc.mu.Unlock()
		if hold != nil {
			select {
			case hit <- struct{}{}:
			default:
			}
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		rc.mu.Lock()
		if rc.hold != nil {
			close(rc.hold)
			rc.hold = nil
		}
		rc.mu.Unlock()
		rc.srv.Close()
	})
	return rc
}

// release answers the held requests and holds no more.
func (rc *receiver) release() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.hold != nil {
		close(rc.hold)
		rc.hold = nil
	}
}

func (rc *receiver) deliveries() []http.Header {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]http.Header(nil), rc.got...)
}

// Test secrets. The hook secret reaches the service through ${…}
// expansion, the recipient secret is literal in the file.
const (
	hookSecretEnv   = "HERALD_TEST_CI_SECRET"
	hookSecret      = "whsec_Y2ktc2VjcmV0LWZvci1oZXJhbGQtdGVzdHMtMDEyMzQ1Njc4OQ=="
	recipientSecret = "whsec_b3BzLXNlY3JldC1mb3ItaGVyYWxkLXRlc3RzLTk4NzY1NDMyMQ=="
)

// secretsIn lists every configured secret value (and its decoded key) found in s.
func secretsIn(s string) []string {
	var found []string
	for _, sec := range []string{hookSecret, recipientSecret} {
		b64 := strings.TrimPrefix(sec, "whsec_")
		raw, _ := base64.StdEncoding.DecodeString(b64)
		for _, needle := range []string{sec, b64, string(raw)} {
			if needle != "" && strings.Contains(s, needle) {
				found = append(found, needle)
			}
		}
	}
	return found
}

// fixture is a configuration derived from the reference config with a
// declared RSS task, a webhook recipient and a Standard Webhooks inbound hook.
type fixture struct {
	addr string
	feed *feed
	rcv  *receiver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{addr: freeAddr(t), feed: newFeed(t), rcv: newReceiver(t)}
}

// config returns the YAML; extraTasks is appended to the tasks list.
func (fx *fixture) config(t *testing.T, extraTasks string) string {
	t.Helper()
	return adjustExample(t, fx.addr, map[string]string{
		"inbound: {}":   "inbound:\n  ci:\n    format: standard\n    secret: \"${" + hookSecretEnv + "}\"\n    route: [admin-inbox]\n",
		"recipients:\n": "recipients:\n  ops:\n    webhook: {url: \"" + fx.rcv.srv.URL + "/herald\", secret: \"" + recipientSecret + "\", idempotent: false}\n",
		"tasks: []":     "tasks:\n  - id: news\n    name: Omni news\n    source: {kind: rss, url: \"" + fx.feed.url() + "\"}\n    schedule: every 30m\n    notify: [admin-inbox]\n" + extraTasks,
	})
}

// start runs the service on the fixture's config.
func (fx *fixture) start(t *testing.T) (*proc, string) {
	t.Helper()
	return startServe(t, fx.config(t, ""), hookSecretEnv+"="+hookSecret)
}

// adjustExample reads the reference config and adapts it for a test: the
// listen address, private networks allowed, and the given replacements.
func adjustExample(t *testing.T, addr string, repl map[string]string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "herald.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	must := func(old, new string) {
		t.Helper()
		if !strings.Contains(cfg, old) {
			t.Fatalf("the reference config no longer contains %q", old)
		}
		cfg = strings.Replace(cfg, old, new, 1)
	}
	must("listen: 127.0.0.1:8080", "listen: "+addr)
	must("allow_private_networks: false", "allow_private_networks: true")
	for old, new := range repl {
		must(old, new)
	}
	return cfg
}

// signHook signs body for POST /hooks/<name> the way a Standard Webhooks
// sender does.
func signHook(secret, id string, ts time.Time, body []byte) http.Header {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	sec := strconv.FormatInt(ts.Unix(), 10)
	mac.Write([]byte(id + "." + sec + "."))
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", sec)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return h
}

// taskRow is the documented `tasks list --json` element.
type taskRow struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	State       string     `json:"state"`
	Owner       string     `json:"owner"`
	Schedule    string     `json:"schedule"`
	NextRun     *time.Time `json:"next_run"`
	LastOutcome string     `json:"last_outcome"`
	Class       string     `json:"class"`       // beside a failed last_outcome
	LastReason  string     `json:"last_reason"` // beside a failed last_outcome
	Source      struct {
		Kind string `json:"kind"`
		Host string `json:"host"`
	} `json:"source"`
}

// effectRow is the documented `ledger show --json` element.
type effectRow struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"`
	Task      string    `json:"task"`
	Recipient string    `json:"recipient"`
	State     string    `json:"state"`
	Attempts  int       `json:"attempts"`
	UpdatedAt time.Time `json:"updated_at"`
	Error     string    `json:"error"`
}

// listTasks returns `tasks list --json` by id.
func listTasks(t *testing.T, dataDir string) map[string]taskRow {
	t.Helper()
	var rows []taskRow
	cliJSON(t, dataDir, &rows, "tasks", "list")
	out := map[string]taskRow{}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

// waitBaseline waits until the declared task has finished a run. A run
// that committed nothing (refused because the task changed under it, or
// cut short) is not one: the scheduler checks the task again at once.
func waitBaseline(t *testing.T, dataDir, id string) {
	t.Helper()
	eventually(t, id+" has run", func() bool {
		switch listTasks(t, dataDir)[id].LastOutcome {
		case "", "rejected", "cancelled", "interrupted":
			return false
		}
		return true
	})
}

// localService is the start of a test service's config: listening on
// addr, chat channels off, console:admin the admin, loopback sources and
// recipients allowed. It ends inside policy, so a caller may add policy
// keys before its own sections.
func localService(addr string) string {
	return fmt.Sprintf(`server:
  listen: %s
timezone: UTC
channels:
  telegram: {enabled: false}
  feishu: {enabled: false}
policy:
  admins: ["console:admin"]
  allow_private_networks: true
`, addr)
}
