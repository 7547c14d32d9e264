package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
	"github.com/herald-bridge/herald/webhook/signature"
)

// t0 is the clock of the task manager behind the test server.
var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// Secrets used by the tests; every log line is checked not to contain them.
const (
	stdSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"     // the Standard Webhooks test vector's
	stdSecretNew = "whsec_bmV3LXNlY3JldC1hZnRlci1yb3RhdGlvbg==" // "new-secret-after-rotation"
	ghSecret     = "gh-hook-secret-7f3c1a"
	adminToken   = "hadm_4f1b9c0e2d7a6b5c8e3f1a0d9c7b6a5e"
)

// syncBuffer is a log sink safe for concurrent handlers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testServer is a real Server on 127.0.0.1 with the real hook, admin and
// inbox handlers over a real bbolt store and a real task manager.
type testServer struct {
	t       *testing.T
	srv     *Server
	url     string
	store   *bolt.Store
	manager *tasks.Manager
	hooks   *Hooks
	admin   *Admin
	inbox   *InboxAPI
	logs    *syncBuffer
	now     time.Time // the hooks' clock
	nowMu   sync.Mutex
}

type serverConfig struct {
	maxInFlight int
	inbound     InboundLimits // zero: the defaults
	otherShare  int           // Options.OtherPerClient
	proxies     []string      // trusted proxies
	hooks       []Hook
	extra       func(s *Server)    // more routes
	clock       *tasks.ManualClock // when set, the store's and the manager's clock
}

// newTestServer starts a server configured by cfg and stops it when the
// test ends.
func newTestServer(t *testing.T, cfg serverConfig) *testServer {
	t.Helper()
	clock, opts := cfg.clock, bolt.Options{}
	if clock != nil {
		opts.Now = clock.Now
	} else {
		clock = tasks.NewManualClock(t0)
	}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng, err := engine.New(engine.Options{
		Store: st, Clock: clock, Holder: "test", Log: zerolog.Nop(),
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			return nil, errors.New("no sources in these tests")
		}),
		Policy: tasks.Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*"}, Named: map[string]bool{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := eng.Catalog
	ts := &testServer{t: t, store: st, manager: m, logs: &syncBuffer{}, now: time.Now()}
	log := zerolog.New(ts.logs).Level(zerolog.DebugLevel)
	proxies, err := ParseProxies(cfg.proxies)
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = New(Options{Addr: "127.0.0.1:0", MaxInFlight: cfg.maxInFlight, Inbound: cfg.inbound, OtherPerClient: cfg.otherShare, TrustedProxies: proxies, Log: log})
	ts.hooks = NewHooks(eng.Admitter, ts.clock)
	if err := ts.hooks.Set(cfg.hooks); err != nil {
		t.Fatal(err)
	}
	ts.admin = NewAdmin(adminToken)
	ts.inbox = &InboxAPI{Tokens: InboxTokens{KV: st.Channels()}, Inbox: st.Inbox()}
	ts.srv.Handle("/hooks/{name}", ts.hooks.ServeHTTP)
	ts.srv.Handle("/admin/v1/{op}", ts.admin.ServeHTTP)
	ts.srv.Handle("/api/v1/inbox", ts.inbox.ServeHTTP)
	ts.srv.Handle("GET /healthz", func(w http.ResponseWriter, r *http.Request) error {
		_, err := io.WriteString(w, "ok\n")
		return err
	})
	if cfg.extra != nil {
		cfg.extra(ts.srv)
	}
	if err := ts.srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ts.url = "http://" + ts.srv.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve(ctx, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ts
}

func (ts *testServer) clock() time.Time {
	ts.nowMu.Lock()
	defer ts.nowMu.Unlock()
	return ts.now
}

func (ts *testServer) setNow(t time.Time) {
	ts.nowMu.Lock()
	ts.now = t
	ts.nowMu.Unlock()
}

// claims returns the ledger entries hook name has claimed.
func (ts *testServer) claims(name string) []store.Effect {
	ts.t.Helper()
	fxs, err := ts.store.Ledger().List(context.Background(), "hook:"+name, 0)
	if err != nil {
		ts.t.Fatal(err)
	}
	return fxs
}

// message decodes the neutral message a claim carries.
func message(t *testing.T, fx store.Effect) delivery.Message {
	t.Helper()
	var m delivery.Message
	if err := json.Unmarshal(fx.Payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// response is an answer read whole.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r response) code() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// do sends one request to the test server.
func (ts *testServer) do(method, path string, header http.Header, body []byte) response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

// stdHeaders signs body for a Standard Webhooks hook with the package
// under test, and checks that signature against an HMAC computed here
// from the specification, so a wrong signer cannot pass its own verifier.
func stdHeaders(t *testing.T, secret, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	key, err := signature.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig := signature.Sign(key, id, ts, body)
	if want := independentStd(t, secret, id, ts.Unix(), body); sig != want {
		t.Fatalf("signature.Sign = %s, the specification gives %s", sig, want)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", sig)
	return h
}

// independentStd is "v1," + base64(HMAC-SHA256(base64decode(secret after
// whsec_), id "." ts "." body)).
func independentStd(t *testing.T, secret, id string, ts int64, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// githubHeaders signs body like GitHub: sha256=<hex HMAC-SHA256(secret, body)>,
// computed here without the package under test.
func githubHeaders(secret, delivery, event string, body []byte) http.Header {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-GitHub-Event", event)
	return h
}

// assertNoSecrets fails when any log line carries a secret, a key or a
// signature (I10).
func assertNoSecrets(t *testing.T, logs string, extra ...string) {
	t.Helper()
	secrets := append([]string{stdSecret, strings.TrimPrefix(stdSecret, "whsec_"), stdSecretNew,
		strings.TrimPrefix(stdSecretNew, "whsec_"), ghSecret, adminToken}, extra...)
	for _, s := range secrets {
		if s != "" && strings.Contains(logs, s) {
			t.Errorf("logs contain %q:\n%s", s, logs)
		}
	}
	for _, marker := range []string{"v1,", "sha256=", "Bearer", "whsec_"} {
		if strings.Contains(logs, marker) {
			t.Errorf("logs contain %q:\n%s", marker, logs)
		}
	}
}
