package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
)

// The Standard Webhooks specification's own test vector.
const (
	vectorID   = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS   = 1614265330
	vectorBody = `{"test": 2432232314}`
	vectorSig  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func stdHook(name string, route ...string) Hook {
	if len(route) == 0 {
		route = []string{"inbox:console:alice"}
	}
	return Hook{Name: name, Format: "standard", Secrets: []string{stdSecret}, Route: route}
}

func TestStandardWebhooksVectorEndToEnd(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci", "inbox:console:alice", "ops")}})
	ts.setNow(time.Unix(vectorTS, 0).Add(90 * time.Second))

	if got := independentStd(t, stdSecret, vectorID, vectorTS, []byte(vectorBody)); got != vectorSig {
		t.Fatalf("independent HMAC %s, the specification says %s", got, vectorSig)
	}
	h := http.Header{}
	h.Set("webhook-id", vectorID)
	h.Set("webhook-timestamp", fmt.Sprint(vectorTS))
	h.Set("webhook-signature", vectorSig)
	res := ts.do(http.MethodPost, "/hooks/ci", h, []byte(vectorBody))
	if res.status != http.StatusAccepted {
		t.Fatalf("status %d (%s), want 202", res.status, res.raw)
	}
	if res.body["ok"] != true || res.body["id"] != vectorID || res.body["duplicate"] != false {
		t.Errorf("body %s", res.raw)
	}
	fxs := ts.claims("ci")
	if len(fxs) != 2 {
		t.Fatalf("%d claims, want one per routed recipient (2)", len(fxs))
	}
	seen := map[string]bool{}
	for _, fx := range fxs {
		seen[fx.Recipient] = true
		m := message(t, fx)
		if m.Kind != delivery.KindInbound || m.TaskID != "hook:ci" {
			t.Errorf("message %+v", m)
		}
	}
	if !seen["inbox:console:alice"] || !seen["ops"] {
		t.Errorf("recipients %v", seen)
	}
}

func TestI1_ReplayedDeliveryClaimsOnce(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{
		stdHook("ci", "inbox:console:alice", "ops"),
		{Name: "gh", Format: "github", Secrets: []string{ghSecret}, Route: []string{"ops"}},
	}})
	body := []byte(`{"title":"build 17 failed","url":"https://ci.example.com/17"}`)
	for i, wantDup := range []bool{false, true, true} {
		// A retry keeps its id and is signed again with a new timestamp.
		at := ts.clock().Add(time.Duration(i) * time.Second)
		res := ts.do(http.MethodPost, "/hooks/ci", stdHeaders(t, stdSecret, "msg_replayed", at, body), body)
		if res.status != http.StatusAccepted || res.body["duplicate"] != wantDup {
			t.Fatalf("attempt %d: status %d body %s", i, res.status, res.raw)
		}
		gh := ts.do(http.MethodPost, "/hooks/gh", githubHeaders(ghSecret, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "ping", body), body)
		if gh.status != http.StatusAccepted || gh.body["duplicate"] != wantDup {
			t.Fatalf("github attempt %d: status %d body %s", i, gh.status, gh.raw)
		}
	}
	if n := len(ts.claims("ci")); n != 2 {
		t.Errorf("standard: %d claims, want 2 (one per recipient)", n)
	}
	if n := len(ts.claims("gh")); n != 1 {
		t.Errorf("github: %d claims, want 1", n)
	}
}

func TestGitHubSignatureAndSummary(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{{Name: "gh", Format: "github", Secrets: []string{ghSecret}, Route: []string{"ops"}}}})
	body, err := os.ReadFile("testdata/github-pull-request-opened.json")
	if err != nil {
		t.Fatal(err)
	}
	res := ts.do(http.MethodPost, "/hooks/gh", githubHeaders(ghSecret, "9c5f3e70-1b2a-11ef-8f0e-3a1b2c3d4e5f", "pull_request", body), body)
	if res.status != http.StatusAccepted {
		t.Fatalf("status %d (%s)", res.status, res.raw)
	}
	fxs := ts.claims("gh")
	if len(fxs) != 1 {
		t.Fatalf("%d claims", len(fxs))
	}
	m := message(t, fxs[0])
	wantTitle := "GitHub pull_request opened · octo-org/hello-world"
	if m.Title != wantTitle {
		t.Errorf("title %q, want %q", m.Title, wantTitle)
	}
	for _, want := range []string{wantTitle, "Fix the flaky retry test", "https://github.com/octo-org/hello-world/pull/42"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("summary %q lacks %q", m.Text, want)
		}
	}

	// The same body signed with another secret, or tampered with, is refused.
	wrong := githubHeaders("not-the-secret", "9c5f3e70-0000", "pull_request", body)
	if res := ts.do(http.MethodPost, "/hooks/gh", wrong, body); res.status != http.StatusUnauthorized {
		t.Errorf("wrong secret: status %d", res.status)
	}
	tampered := bytes.Replace(body, []byte("opened"), []byte("closed"), 1)
	h := githubHeaders(ghSecret, "9c5f3e70-0001", "pull_request", body)
	if res := ts.do(http.MethodPost, "/hooks/gh", h, tampered); res.status != http.StatusUnauthorized {
		t.Errorf("tampered body: status %d", res.status)
	}
	noID := githubHeaders(ghSecret, "", "pull_request", body)
	if res := ts.do(http.MethodPost, "/hooks/gh", noID, body); res.status != http.StatusUnauthorized {
		t.Errorf("no delivery id: status %d", res.status)
	}
	if n := len(ts.claims("gh")); n != 1 {
		t.Errorf("%d claims after refused deliveries, want 1", n)
	}
}

// GitHub's documented vector: the signature verifies, so the refusal is
// about the body (not JSON), not the signature.
func TestGitHubDocumentedVector(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	ts := newTestServer(t, serverConfig{hooks: []Hook{{Name: "gh", Format: "github", Secrets: []string{secret}, Route: []string{"ops"}}}})
	body := []byte("Hello, World!")
	h := githubHeaders(secret, "d-1", "ping", body)
	if got := h.Get("X-Hub-Signature-256"); got != "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Fatalf("independent HMAC %s", got)
	}
	res := ts.do(http.MethodPost, "/hooks/gh", h, body)
	if res.status != http.StatusBadRequest || res.code() != "bad_json" {
		t.Errorf("status %d code %q, want 400 bad_json", res.status, res.code())
	}
	h.Set("X-Hub-Signature-256", "sha256=857107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
	if res := ts.do(http.MethodPost, "/hooks/gh", h, body); res.status != http.StatusUnauthorized {
		t.Errorf("flipped signature: status %d", res.status)
	}
}

func TestHookRefusals(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci")}})
	now := ts.clock()
	good := []byte(`{"title":"deploy","url":"https://ci.example.com/1"}`)
	cases := []struct {
		name   string
		method string
		path   string
		header http.Header
		body   []byte
		status int
		code   string
	}{
		{"ten minutes old", "POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-old", now.Add(-10*time.Minute), good), good, 401, "bad_signature"},
		{"ten minutes ahead", "POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-new", now.Add(10*time.Minute), good), good, 401, "bad_signature"},
		{"wrong secret", "POST", "/hooks/ci", stdHeaders(t, stdSecretNew, "m-wrong", now, good), good, 401, "bad_signature"},
		{"no signature", "POST", "/hooks/ci", http.Header{"Webhook-Id": {"m-none"}, "Webhook-Timestamp": {fmt.Sprint(now.Unix())}}, good, 401, "bad_signature"},
		{"partial signature", "POST", "/hooks/ci", withHeader(stdHeaders(t, stdSecret, "m-partial", now, good), "webhook-signature", "v1,"), good, 401, "bad_signature"},
		{"spec's wrong signature", "POST", "/hooks/ci", withHeader(stdHeaders(t, stdSecret, "m-spec", now, good), "webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="), good, 401, "bad_signature"},
		{"tampered body", "POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-tamper", now, good), []byte(`{"title":"deploy!"}`), 401, "bad_signature"},
		{"unknown hook", "POST", "/hooks/nope", stdHeaders(t, stdSecret, "m-404", now, good), good, 404, "not_found"},
		{"GET", "GET", "/hooks/ci", nil, nil, 405, "method_not_allowed"},
		{"malformed JSON", "POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-json", now, []byte(`{"title":`)), []byte(`{"title":`), 400, "bad_json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := ts.do(tc.method, tc.path, tc.header, tc.body)
			if res.status != tc.status || res.code() != tc.code {
				t.Errorf("status %d code %q, want %d %q (%s)", res.status, res.code(), tc.status, tc.code, res.raw)
			}
		})
	}
	if n := len(ts.claims("ci")); n != 0 {
		t.Errorf("%d claims from refused deliveries", n)
	}
	// Within tolerance, both ways, is accepted.
	for i, d := range []time.Duration{-4*time.Minute - 50*time.Second, 4*time.Minute + 50*time.Second} {
		id := fmt.Sprintf("m-edge-%d", i)
		if res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, id, now.Add(d), good), good); res.status != 202 {
			t.Errorf("timestamp now%+v: status %d", d, res.status)
		}
	}
}

func withHeader(h http.Header, k, v string) http.Header {
	h.Set(k, v)
	return h
}

// I7: 1 MiB per inbound webhook body.
func TestI7_HookBodyLimit(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci")}})
	exact := jsonOfSize(t, MaxHookBody)
	res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-exact", ts.clock(), exact), exact)
	if res.status != http.StatusAccepted {
		t.Errorf("exactly 1 MiB: status %d (%s)", res.status, res.raw)
	}
	over := jsonOfSize(t, MaxHookBody+1)
	res = ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-over", ts.clock(), over), over)
	if res.status != http.StatusRequestEntityTooLarge || res.code() != "too_large" {
		t.Errorf("1 MiB + 1: status %d code %q", res.status, res.code())
	}
	if n := len(ts.claims("ci")); n != 1 {
		t.Errorf("%d claims, want 1", n)
	}
}

// jsonOfSize is a valid JSON object of exactly n bytes.
func jsonOfSize(t *testing.T, n int) []byte {
	t.Helper()
	const head, tail = `{"title":"big","pad":"`, `"}`
	b := []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
	if len(b) != n {
		t.Fatalf("built %d bytes, want %d", len(b), n)
	}
	return b
}

func TestSecretRotation(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{{Name: "ci", Format: "standard", Secrets: []string{stdSecret, stdSecretNew}, Route: []string{"ops"}}}})
	body := []byte(`{"title":"rotated"}`)
	now := ts.clock()
	for i, secret := range []string{stdSecret, stdSecretNew} {
		res := ts.do("POST", "/hooks/ci", stdHeaders(t, secret, fmt.Sprintf("m-rot-%d", i), now, body), body)
		if res.status != http.StatusAccepted {
			t.Errorf("secret %d: status %d", i, res.status)
		}
	}
	// A sender mid-rotation lists several signatures; an unknown version
	// entry is skipped, any matching v1 verifies.
	h := stdHeaders(t, stdSecretNew, "m-rot-multi", now, body)
	h.Set("webhook-signature", "v2,Y2FmZWJhYmU= v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= "+h.Get("webhook-signature"))
	if res := ts.do("POST", "/hooks/ci", h, body); res.status != http.StatusAccepted {
		t.Errorf("multi-signature header: status %d", res.status)
	}
	// After rotation ends, the old secret is refused.
	if err := ts.hooks.Set([]Hook{{Name: "ci", Format: "standard", Secrets: []string{stdSecretNew}, Route: []string{"ops"}}}); err != nil {
		t.Fatal(err)
	}
	if res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-rot-old", now, body), body); res.status != http.StatusUnauthorized {
		t.Errorf("retired secret: status %d", res.status)
	}
}

func TestHooksSetReportsEveryProblem(t *testing.T) {
	h := NewHooks(nil, nil)
	err := h.Set([]Hook{
		{Name: "a", Format: "standard", Secrets: []string{"whsec_!!!"}, Route: []string{"ops"}},
		{Name: "b", Format: "standard", Secrets: []string{""}, Route: []string{"ops"}},
		{Name: "c", Format: "standard", Secrets: []string{stdSecret}, Template: "{{.title", Route: []string{"ops"}},
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"inbound a", "inbound b", "inbound c"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "!!!") || strings.Contains(err.Error(), stdSecret) {
		t.Errorf("error quotes a secret: %q", err)
	}
}

func TestTemplateRendering(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes, 2 bytes a rune
	ts := newTestServer(t, serverConfig{hooks: []Hook{
		{Name: "tpl", Format: "standard", Secrets: []string{stdSecret}, Route: []string{"ops"}, Template: "{{.title}}: {{.url}}"},
		{Name: "funcs", Format: "standard", Secrets: []string{stdSecret}, Route: []string{"ops"},
			Template: `{{upper .title}} by {{default "someone" .author}} {{truncate 5 .body}} {{json .tags}}`},
		{Name: "cap", Format: "standard", Secrets: []string{stdSecret}, Route: []string{"ops"}, Template: "x{{.title}}{{.title}}"},
		{Name: "generic", Format: "standard", Secrets: []string{stdSecret}, Route: []string{"ops"}},
	}})
	cases := []struct {
		hook, body, want string
	}{
		{"tpl", `{"title":"Build failed","url":"https://ci.example.com/9"}`, "Build failed: https://ci.example.com/9"},
		{"funcs", `{"title":"deploy","body":"abcdefgh","tags":["a","b"]}`, `DEPLOY by someone abcde… ["a","b"]`},
		{"generic", `{"title":"Backup done","url":"https://nas.example.com/b"}`, "Backup done: https://nas.example.com/b"},
		{"generic", `{"status":"ok","host":"nas"}`, "host: nas\nstatus: ok"},
		{"generic", `[1,2,3]`, "event received"},
	}
	for i, tc := range cases {
		id := fmt.Sprintf("m-tpl-%d", i)
		res := ts.do("POST", "/hooks/"+tc.hook, stdHeaders(t, stdSecret, id, ts.clock(), []byte(tc.body)), []byte(tc.body))
		if res.status != http.StatusAccepted {
			t.Fatalf("%s: status %d", tc.hook, res.status)
		}
		var got string
		for _, fx := range ts.claims(tc.hook) {
			if strings.HasSuffix(fx.RunID, "/"+id) {
				got = message(t, fx).Text
			}
		}
		if got != tc.want {
			t.Errorf("%s %s: text %q, want %q", tc.hook, tc.body, got, tc.want)
		}
	}

	body := []byte(`{"title":"` + long + `"}`)
	res := ts.do("POST", "/hooks/cap", stdHeaders(t, stdSecret, "m-cap", ts.clock(), body), body)
	if res.status != http.StatusAccepted {
		t.Fatalf("cap: status %d", res.status)
	}
	fxs := ts.claims("cap")
	if len(fxs) != 1 {
		t.Fatalf("%d claims", len(fxs))
	}
	text := message(t, fxs[0]).Text
	if len(text) > maxRendered || len(text) < maxRendered-utf8.UTFMax {
		t.Errorf("rendered %d bytes, want the cap (%d)", len(text), maxRendered)
	}
	if !utf8.ValidString(text) || strings.ContainsRune(text, utf8.RuneError) {
		t.Errorf("capped text is cut inside a character: ...%q", text[len(text)-8:])
	}
	if !strings.HasPrefix(text, "x"+long[:100]) {
		t.Errorf("capped text starts %q", text[:20])
	}
}

// Under more concurrent hooks than the server serves at once, every
// answer is 202 or 503 + Retry-After, every 202 is exactly one claim per
// routed recipient, and the server stays healthy.
func TestI1_ConcurrentHooksUnderLoad(t *testing.T) {
	route := []string{"inbox:console:alice", "ops"}
	ts := newTestServer(t, serverConfig{maxInFlight: 4, hooks: []Hook{stdHook("ci", route...)}})
	const n = 200
	type answer struct {
		id         string
		status     int
		retryAfter string
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("m-load-%03d", i)
			body := fmt.Appendf(nil, `{"title":"event %d"}`, i)
			h := stdHeaders(t, stdSecret, id, ts.clock(), body)
			req, _ := http.NewRequest("POST", ts.url+"/hooks/ci", bytes.NewReader(body))
			req.Header = h
			<-start
			res, err := client.Do(req)
			if err != nil {
				t.Errorf("%s: %v", id, err)
				return
			}
			res.Body.Close()
			answers[i] = answer{id, res.StatusCode, res.Header.Get("Retry-After")}
		}()
	}
	close(start)
	wg.Wait()
	accepted := map[string]bool{}
	busy := 0
	for _, a := range answers {
		switch {
		case a.status == http.StatusAccepted:
			accepted[a.id] = true
		case a.status == http.StatusServiceUnavailable && a.retryAfter != "":
			busy++
		default:
			t.Errorf("%s: status %d retry-after %q", a.id, a.status, a.retryAfter)
		}
	}
	t.Logf("%d accepted, %d told to retry", len(accepted), busy)
	if len(accepted) == 0 {
		t.Error("nothing was accepted")
	}
	perID := map[string]int{}
	for _, fx := range ts.claims("ci") {
		perID[strings.TrimPrefix(fx.RunID, "hook:ci/")]++
	}
	for id := range accepted {
		if perID[id] != len(route) {
			t.Errorf("%s: %d claims, want %d", id, perID[id], len(route))
		}
	}
	for id, c := range perID {
		if !accepted[id] {
			t.Errorf("%s: %d claims for a delivery that was not accepted", id, c)
		}
	}
	if got := ts.srv.inflight.Load(); got != 0 {
		t.Errorf("%d requests still counted in flight", got)
	}
	if res := ts.do("GET", "/healthz", nil, nil); res.status != http.StatusOK {
		t.Errorf("healthz after load: %d", res.status)
	}
	body := []byte(`{"title":"after"}`)
	if res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-after", ts.clock(), body), body); res.status != http.StatusAccepted {
		t.Errorf("hook after load: %d", res.status)
	}
	assertNoSecrets(t, ts.logs.String())
}

func TestHandlerPanicIs500AndServerKeepsServing(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci")}, extra: func(s *Server) {
		s.Handle("/boom", func(http.ResponseWriter, *http.Request) error { panic("handler bug") })
		s.HandleHTTP("/boom-plain", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(fmt.Errorf("plain bug")) }))
	}})
	for _, p := range []string{"/boom", "/boom-plain", "/boom"} {
		res := ts.do("GET", p, nil, nil)
		if res.status != http.StatusInternalServerError || res.code() != "internal" {
			t.Errorf("%s: status %d code %q", p, res.status, res.code())
		}
		if strings.Contains(res.raw, "bug") {
			t.Errorf("%s: the panic value reached the client: %s", p, res.raw)
		}
	}
	if got := ts.srv.inflight.Load(); got != 0 {
		t.Errorf("%d requests still counted in flight", got)
	}
	if res := ts.do("GET", "/healthz", nil, nil); res.status != http.StatusOK {
		t.Errorf("healthz after panics: %d", res.status)
	}
	if !strings.Contains(ts.logs.String(), "handler panicked") {
		t.Error("the panic was not logged")
	}
}

// I10: access and error logs never carry secrets, tokens or signatures.
func TestI10_LogsCarryNoSecrets(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci"), {Name: "gh", Format: "github", Secrets: []string{ghSecret}, Route: []string{"ops"}}}})
	body := []byte(`{"title":"t"}`)
	now := ts.clock()
	ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-log-1", now, body), body)
	ts.do("POST", "/hooks/ci?token="+adminToken, stdHeaders(t, stdSecretNew, "m-log-2", now, body), body)
	ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-log-3", now.Add(-time.Hour), body), body)
	ts.do("POST", "/hooks/gh", githubHeaders(ghSecret, "d-log", "push", body), body)
	ts.do("POST", "/hooks/gh", githubHeaders("wrong", "d-log-2", "push", body), body)
	ts.do("POST", "/admin/v1/x", http.Header{"Authorization": {"Bearer " + adminToken + "x"}}, []byte(`{}`))
	ts.do("GET", "/api/v1/inbox", http.Header{"Authorization": {"Bearer hin_" + strings.Repeat("ab", 24)}}, nil)
	logs := ts.logs.String()
	if !strings.Contains(logs, `"path":"/hooks/ci"`) {
		t.Fatalf("no access log lines:\n%s", logs)
	}
	assertNoSecrets(t, logs, "hin_"+strings.Repeat("ab", 24))
}

// The default summary quotes the payload; a huge title or text is clipped
// at a character boundary like a template's output.
func TestDefaultSummaryIsBounded(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci"), {Name: "gh", Format: "github", Secrets: []string{ghSecret}, Route: []string{"ops"}}}})
	big := strings.Repeat("日", 100_000)
	body := []byte(`{"title":"` + big + `","url":"https://x.example/` + big + `","pull_request":{"title":"` + big + `"}}`)
	ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-big", ts.clock(), body), body)
	ts.do("POST", "/hooks/gh", githubHeaders(ghSecret, "d-big", "pull_request", body), body)
	for _, name := range []string{"ci", "gh"} {
		fxs := ts.claims(name)
		if len(fxs) != 1 {
			t.Fatalf("%s: %d claims", name, len(fxs))
		}
		m := message(t, fxs[0])
		if len(m.Title) > maxTitle || len(m.Text) > maxRendered || !utf8.ValidString(m.Title+m.Text) {
			t.Errorf("%s: title %d bytes, text %d bytes, valid %v", name, len(m.Title), len(m.Text), utf8.ValidString(m.Title+m.Text))
		}
	}
}

// FuzzHookMessage feeds arbitrary payloads through the summary and
// template paths: no panic, bounded valid output.
func FuzzHookMessage(f *testing.F) {
	for _, s := range []string{`{"title":"a","url":"https://x"}`, `{"action":"opened","repository":{"full_name":"o/r"},"issue":{"title":"t","html_url":"u"}}`,
		`[1,2]`, `null`, `"str"`, `{"head_commit":{"message":"m","url":"u"}}`, `{"a":"b","c":1,"d":{"e":"f"}}`} {
		f.Add([]byte(s), "push")
	}
	hooks := map[string]*compiledHook{}
	for _, hk := range []Hook{
		{Name: "std", Format: "standard"}, {Name: "gh", Format: "github"},
		{Name: "tpl", Format: "standard", Template: `{{.title}} {{range .items}}{{.}}{{end}} {{json .}} {{truncate 3 (printf "%v" .url)}}`},
	} {
		c := &compiledHook{Hook: hk}
		if hk.Template != "" {
			tmpl, err := CompileTemplate(hk.Template)
			if err != nil {
				f.Fatal(err)
			}
			c.tmpl = tmpl
		}
		hooks[hk.Name] = c
	}
	h := NewHooks(nil, func() time.Time { return t0 })
	f.Fuzz(func(t *testing.T, body []byte, event string) {
		var payload any
		if json.Unmarshal(body, &payload) != nil {
			return
		}
		for name, hk := range hooks {
			m := h.message(hk, event, payload)
			if len(m.Text) > maxRendered {
				t.Errorf("%s: text %d bytes", name, len(m.Text))
			}
			if len(m.Title) > maxTitle || !utf8.ValidString(m.Title) || !utf8.ValidString(m.Text) {
				t.Errorf("%s: title %d bytes, valid UTF-8 %v", name, len(m.Title), utf8.ValidString(m.Title+m.Text))
			}
		}
	})
}

// At the concurrency cap, work is refused with 503 + Retry-After while
// liveness and readiness probes are still answered.
func TestBusyServerStillAnswersProbes(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	ts := newTestServer(t, serverConfig{maxInFlight: 1, hooks: []Hook{stdHook("ci")}, extra: func(s *Server) {
		s.Handle("/slow", func(w http.ResponseWriter, r *http.Request) error {
			close(entered)
			<-release
			return nil
		})
	}})
	done := make(chan response)
	go func() { done <- ts.do("GET", "/slow", nil, nil) }()
	<-entered
	body := []byte(`{"title":"t"}`)
	res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-busy", ts.clock(), body), body)
	if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" || res.code() != "busy" {
		t.Errorf("hook at the cap: %d retry-after %q code %q", res.status, res.header.Get("Retry-After"), res.code())
	}
	if res := ts.do("GET", "/healthz", nil, nil); res.status != http.StatusOK {
		t.Errorf("healthz at the cap: %d", res.status)
	}
	close(release)
	if res := <-done; res.status != http.StatusOK {
		t.Errorf("slow request: %d", res.status)
	}
	if res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-busy", ts.clock(), body), body); res.status != http.StatusAccepted {
		t.Errorf("hook after the cap cleared: %d", res.status)
	}
}

// Any id the Standard Webhooks specification allows is accepted,
// "evt.2026.12.01.1" included, and deduplicates like any other.
func TestI1_HookIDsWithDotsAreAcceptedAndClaimedOnce(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci")}})
	body := []byte(`{"title":"deploy 12 done"}`)
	for i, wantDup := range []bool{false, true} {
		at := ts.clock().Add(time.Duration(i) * time.Second)
		res := ts.do(http.MethodPost, "/hooks/ci", stdHeaders(t, stdSecret, "evt.2026.12.01.1", at, body), body)
		if res.status != http.StatusAccepted || res.body["id"] != "evt.2026.12.01.1" || res.body["duplicate"] != wantDup {
			t.Fatalf("attempt %d: status %d body %s", i, res.status, res.raw)
		}
	}
	if n := len(ts.claims("ci")); n != 1 {
		t.Fatalf("%d claims, want 1", n)
	}
}
