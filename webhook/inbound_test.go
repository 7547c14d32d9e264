package webhook

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"
)

// rawPost opens a connection from the loopback address from (127.0.0.2
// and the rest of 127/8 need no setup on Linux), sends a POST's headers
// declaring a body of declared bytes, then sent (a prefix of it), and
// leaves the rest unsent.
func rawPost(t *testing.T, ts *testServer, from, path string, h http.Header, declared int, sent []byte) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", ts.srv.Addr())
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: herald.test\r\nContent-Length: %d\r\n", path, declared)
	for k, vs := range h {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	if len(sent) > 0 {
		if _, err := c.Write(sent); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// answer is one response read off a raw connection.
type answer struct {
	status     int
	code       string
	retryAfter string
	took       time.Duration
}

// readAnswer reads the response on c, waiting at most within.
func readAnswer(t *testing.T, c net.Conn, within time.Duration) answer {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(within))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", within, err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	return answer{status: res.StatusCode, code: body.Error.Code, retryAfter: res.Header.Get("Retry-After"), took: time.Since(start)}
}

// slowHeaders are Standard Webhooks headers that pass every check made
// before the body: present, well formed, timestamp now.
func slowHeaders(id string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", fmt.Sprint(time.Now().Unix()))
	h.Set("webhook-signature", "v1,"+strings.Repeat("A", 43)+"=")
	return h
}

// waitInbound waits until the server's inbound load satisfies cond.
func waitInbound(t *testing.T, ts *testServer, what string, cond func(InboundStats) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(ts.srv.Inbound()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: inbound %+v", what, ts.srv.Inbound())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Everything a hook's headers can condemn is answered at once, without
// waiting for a body that may never come.
func TestInbound_HeadersAreCheckedBeforeTheBodyIsRead(t *testing.T) {
	gh := Hook{Name: "gh", Format: "github", Secrets: []string{ghSecret}, Route: []string{"ops"}}
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci"), gh}})
	stale := slowHeaders("m-stale")
	stale.Set("webhook-timestamp", fmt.Sprint(time.Now().Add(-time.Hour).Unix()))
	noSig := slowHeaders("m-nosig")
	noSig.Del("webhook-signature")
	ghNoID := githubHeaders(ghSecret, "", "push", []byte("{}"))
	ghBadSig := githubHeaders(ghSecret, "d-1", "push", []byte("{}"))
	ghBadSig.Set("X-Hub-Signature-256", "sha256=zz")
	cases := []struct {
		name     string
		path     string
		h        http.Header
		declared int
		status   int
		code     string
	}{
		{"unknown hook", "/hooks/nope", slowHeaders("m-1"), 1000, 404, "not_found"},
		{"no signature", "/hooks/ci", noSig, 1000, 401, "bad_signature"},
		{"stale timestamp", "/hooks/ci", stale, 1000, 401, "bad_signature"},
		{"id too long", "/hooks/ci", slowHeaders(strings.Repeat("i", 201)), 1000, 400, "bad_id"},
		{"declared over 1 MiB", "/hooks/ci", slowHeaders("m-big"), MaxHookBody + 1, 413, "too_large"},
		{"github without delivery id", "/hooks/gh", ghNoID, 1000, 401, "bad_signature"},
		{"github malformed signature", "/hooks/gh", ghBadSig, 1000, 401, "bad_signature"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawPost(t, ts, "127.0.0.1", tc.path, tc.h, tc.declared, []byte("{"))
			a := readAnswer(t, c, 2*time.Second)
			if a.status != tc.status || a.code != tc.code {
				t.Errorf("status %d code %q, want %d %q", a.status, a.code, tc.status, tc.code)
			}
		})
	}
	if st := ts.srv.Inbound(); st.PendingBytes != 0 {
		t.Errorf("refused on headers, yet %d body bytes were counted", st.PendingBytes)
	}
}

// One client address gets its share of the inbound routes and then 429 +
// Retry-After; other clients, the admin API, the inbox API and the probes
// keep being served; /readyz's source says inbound is shedding.
func TestInbound_OneClientIsBoundedOthersAreServed(t *testing.T) {
	ts := newTestServer(t, serverConfig{inbound: InboundLimits{PerClient: 2}, hooks: []Hook{stdHook("ci")}})
	ts.admin.Register("ping", func(context.Context, json.RawMessage) (any, error) { return "pong", nil })
	for i := range 2 {
		rawPost(t, ts, "127.0.0.2", "/hooks/ci", slowHeaders(fmt.Sprint("slow-", i)), 100, []byte("{"))
	}
	waitInbound(t, ts, "two slow bodies open", func(s InboundStats) bool { return s.InFlight == 2 })

	third := rawPost(t, ts, "127.0.0.2", "/hooks/ci", slowHeaders("slow-3"), 100, []byte("{"))
	if a := readAnswer(t, third, 2*time.Second); a.status != http.StatusTooManyRequests || a.code != "client_busy" || a.retryAfter == "" {
		t.Errorf("third from the same address: %+v, want 429 client_busy with Retry-After", a)
	}
	body := []byte(`{"title":"deploy"}`)
	if res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-other", ts.clock(), body), body); res.status != http.StatusAccepted {
		t.Errorf("another client's hook: %d %s", res.status, res.raw)
	}
	adm := http.Header{"Authorization": {"Bearer " + adminToken}, "Content-Type": {"application/json"}}
	if res := ts.do("POST", "/admin/v1/ping", adm, []byte("{}")); res.status != http.StatusOK {
		t.Errorf("admin API: %d", res.status)
	}
	if res := ts.do("GET", "/api/v1/inbox", nil, nil); res.status != http.StatusUnauthorized {
		t.Errorf("inbox API without a token: %d", res.status)
	}
	if res := ts.do("GET", "/healthz", nil, nil); res.status != http.StatusOK {
		t.Errorf("healthz: %d", res.status)
	}
	if st := ts.srv.Inbound(); !st.Shedding || st.RefusedClient != 1 {
		t.Errorf("inbound %+v, want shedding with one refusal", st)
	}
	if n := len(ts.claims("ci")); n != 1 {
		t.Errorf("%d claims, want 1", n)
	}
}

// Behind a trusted proxy the client is the right-most untrusted address
// of X-Forwarded-For; from anyone else the header is ignored.
func TestInbound_TrustedProxyNamesTheClient(t *testing.T) {
	ts := newTestServer(t, serverConfig{inbound: InboundLimits{PerClient: 1}, proxies: []string{"127.0.0.1"}, hooks: []Hook{stdHook("ci")}})
	via := func(xff string) http.Header {
		h := slowHeaders("slow")
		h.Set("X-Forwarded-For", xff)
		return h
	}
	rawPost(t, ts, "127.0.0.1", "/hooks/ci", via("198.51.100.7"), 100, []byte("{"))
	waitInbound(t, ts, "one slow body open", func(s InboundStats) bool { return s.InFlight == 1 })
	// A spoofed left-most entry does not make the same client another one.
	same := rawPost(t, ts, "127.0.0.1", "/hooks/ci", via("203.0.113.1, 198.51.100.7"), 100, []byte("{"))
	if a := readAnswer(t, same, 2*time.Second); a.status != http.StatusTooManyRequests {
		t.Errorf("same client through the proxy: %+v, want 429", a)
	}
	rawPost(t, ts, "127.0.0.1", "/hooks/ci", via("198.51.100.8"), 100, []byte("{"))
	waitInbound(t, ts, "another client through the proxy", func(s InboundStats) bool { return s.InFlight == 2 && s.Clients == 2 })
	// 127.0.0.2 is no proxy: its X-Forwarded-For is not believed.
	rawPost(t, ts, "127.0.0.2", "/hooks/ci", via("198.51.100.7"), 100, []byte("{"))
	waitInbound(t, ts, "an untrusted peer is its own client", func(s InboundStats) bool { return s.InFlight == 3 && s.Clients == 3 })
}

func TestProxies_Client(t *testing.T) {
	proxies, err := ParseProxies([]string{"127.0.0.1", "10.0.0.0/8", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		proxies Proxies
		remote  string
		xff     []string
		want    string
	}{
		{"no proxies: the peer", nil, "127.0.0.1:5000", []string{"198.51.100.7"}, "127.0.0.1"},
		{"untrusted peer: header ignored", proxies, "203.0.113.9:5000", []string{"198.51.100.7"}, "203.0.113.9"},
		{"trusted peer, one hop", proxies, "127.0.0.1:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"spoofed left entries ignored", proxies, "127.0.0.1:5000", []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7"},
		{"trusted chain skipped", proxies, "127.0.0.1:5000", []string{"198.51.100.7, 10.1.2.3, 10.0.0.5"}, "198.51.100.7"},
		{"several header lines", proxies, "127.0.0.1:5000", []string{"6.6.6.6", "198.51.100.7, 10.0.0.5"}, "198.51.100.7"},
		{"every hop trusted: the left-most", proxies, "127.0.0.1:5000", []string{"10.0.0.9, 10.0.0.5"}, "10.0.0.9"},
		{"unreadable hop: the one before it", proxies, "127.0.0.1:5000", []string{"198.51.100.7, not-an-ip"}, "127.0.0.1"},
		{"no header: the proxy", proxies, "127.0.0.1:5000", nil, "127.0.0.1"},
		{"ports and brackets", proxies, "[fd00::1]:443", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{"v4 entry with port", proxies, "127.0.0.1:5000", []string{"198.51.100.7:4711"}, "198.51.100.7"},
		{"mapped peer", proxies, "[::ffff:127.0.0.1]:80", []string{"198.51.100.7"}, "198.51.100.7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := tc.proxies.Client(r); got.String() != tc.want {
				t.Errorf("client %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := ParseProxies([]string{"10.0.0.0/8", "proxy.example.com"}); err == nil || !strings.Contains(err.Error(), "proxy.example.com") {
		t.Errorf("bad entry: %v", err)
	}
	// One IPv6 host's /64 is one client.
	a, b := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9")
	if clientKey(a) != clientKey(b) || clientKey(a) == clientKey(netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Error("IPv6 clients are not counted per /64")
	}
}

// A body that does not arrive within the body deadline is answered 408
// and its slot is free again.
func TestInbound_BodyDeadline(t *testing.T) {
	ts := newTestServer(t, serverConfig{inbound: InboundLimits{BodyTimeout: 300 * time.Millisecond}, hooks: []Hook{stdHook("ci")}})
	c := rawPost(t, ts, "127.0.0.2", "/hooks/ci", slowHeaders("slow"), 100, []byte("{"))
	a := readAnswer(t, c, 3*time.Second)
	if a.status != http.StatusRequestTimeout || a.code != "body_timeout" {
		t.Errorf("slow body: %+v, want 408 body_timeout", a)
	}
	waitInbound(t, ts, "slot freed", func(s InboundStats) bool { return s.InFlight == 0 && s.PendingBytes == 0 })
}

// Bodies not yet authenticated share one memory budget: beyond it
// requests get 503 + Retry-After before their bodies are read, the heap
// holds the budget and not what was offered, and a chat platform's route
// is refused before its handler runs.
func TestInbound_BodyBudgetBoundsMemoryBeforeAuthentication(t *testing.T) {
	// A 1 MiB body takes a buffer of 1 MiB + 1 byte (to see its end).
	const clients, held, budget = 24, 3, 3 * (MaxHookBody + 1)
	handlerRan := make(chan struct{}, 1)
	ts := newTestServer(t, serverConfig{
		inbound: InboundLimits{PerClient: 100, BodyTimeout: 10 * time.Second, BodyBudget: budget},
		hooks:   []Hook{stdHook("ci")},
		extra: func(s *Server) {
			s.HandleHTTP("POST /telegram/webhook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				handlerRan <- struct{}{}
			}))
		},
	})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	almost := []byte("{" + strings.Repeat(" ", MaxHookBody-2)) // all but the last byte
	conns := make([]net.Conn, clients)
	for i := range clients {
		// One address each: the budget, not the per-client share, is what holds.
		conns[i] = rawPost(t, ts, fmt.Sprintf("127.0.0.%d", 10+i), "/hooks/ci", slowHeaders(fmt.Sprint("big-", i)), MaxHookBody, nil)
		go func(c net.Conn) { _, _ = c.Write(almost) }(conns[i])
	}
	waitInbound(t, ts, "the budget is spent", func(s InboundStats) bool {
		return s.PendingBytes == budget && s.RefusedBudget == clients-held
	})
	refusals := make(chan *http.Response, clients)
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				res = nil // still counted against the budget, waiting for its last byte
			} else {
				res.Body.Close()
			}
			refusals <- res
		}()
	}
	var refused int
	for range conns {
		res := <-refusals
		if res == nil {
			continue
		}
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Errorf("over the budget: %d retry-after %q", res.StatusCode, res.Header.Get("Retry-After"))
		}
		refused++
	}
	if want := clients - held; refused != want {
		t.Errorf("%d refused, want %d", refused, want)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d clients offered %d MiB; budget %d MiB; heap in use grew %.1f MiB", clients, clients, budget>>20, float64(grew)/(1<<20))
	if grew > 2*budget+int64(len(almost)) {
		t.Errorf("heap in use grew %d bytes with a budget of %d", grew, budget)
	}

	if res := ts.do("POST", "/telegram/webhook", nil, []byte(`{"update_id":1}`)); res.status != http.StatusServiceUnavailable || res.code() != "body_budget" {
		t.Errorf("chat webhook over the budget: %d %q", res.status, res.code())
	}
	select {
	case <-handlerRan:
		t.Error("the chat webhook's handler ran over the budget")
	default:
	}
	for _, c := range conns {
		c.Close()
	}
	waitInbound(t, ts, "budget returned", func(s InboundStats) bool { return s.PendingBytes == 0 && s.InFlight == 0 })
	body := []byte(`{"title":"after"}`)
	if res := ts.do("POST", "/hooks/ci", stdHeaders(t, stdSecret, "m-after", ts.clock(), body), body); res.status != http.StatusAccepted {
		t.Errorf("hook after the flood: %d", res.status)
	}
}

// A GitHub-format delivery signs only its body: the same body and
// signature sent again under a new X-GitHub-Delivery (or another event
// name) is answered as a duplicate and claims nothing.
func TestI1_GitHubBodyReplayedUnderANewDeliveryIsADuplicate(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{
		{Name: "gh", Format: "github", Secrets: []string{ghSecret}, Route: []string{"ops", "inbox:console:alice"}},
		{Name: "gh2", Format: "github", Secrets: []string{ghSecret}, Route: []string{"ops"}},
	}})
	body := []byte(`{"action":"opened","pull_request":{"title":"Fix it","html_url":"https://github.com/o/r/pull/1"}}`)
	first := ts.do("POST", "/hooks/gh", githubHeaders(ghSecret, "d-original", "pull_request", body), body)
	if first.status != http.StatusAccepted || first.body["duplicate"] != false || first.body["id"] != "d-original" {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	for _, h := range []http.Header{
		githubHeaders(ghSecret, "d-original", "pull_request", body),
		githubHeaders(ghSecret, "d-replayed", "pull_request", body),
		githubHeaders(ghSecret, "d-replayed-2", "issues", body),
	} {
		res := ts.do("POST", "/hooks/gh", h, body)
		if res.status != http.StatusAccepted || res.body["duplicate"] != true || res.body["id"] != h.Get("X-GitHub-Delivery") {
			t.Errorf("replay as %s: %d %s", h.Get("X-GitHub-Delivery"), res.status, res.raw)
		}
	}
	if n := len(ts.claims("gh")); n != 2 {
		t.Errorf("%d claims, want one per recipient (2)", n)
	}
	// The digest is per hook: another hook accepts the same body.
	if res := ts.do("POST", "/hooks/gh2", githubHeaders(ghSecret, "d-other-hook", "pull_request", body), body); res.status != http.StatusAccepted || res.body["duplicate"] != false {
		t.Errorf("same body on another hook: %d %s", res.status, res.raw)
	}
	// Another body under a new id is a new event.
	other := []byte(`{"action":"closed"}`)
	if res := ts.do("POST", "/hooks/gh", githubHeaders(ghSecret, "d-next", "pull_request", other), other); res.status != http.StatusAccepted || res.body["duplicate"] != false {
		t.Errorf("new body: %d %s", res.status, res.raw)
	}
}

// Every HTTP error this package answers comes from the catalogue in
// errors.go, and every catalogued code is distinct.
func TestErrors_EveryHTTPErrorIsCatalogued(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range catalogue {
		if seen[e.Code] || e.Code == "" || e.Status < 400 {
			t.Errorf("catalogue entry %+v: duplicate or incomplete", e)
		}
		seen[e.Code] = true
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				if d, ok := n.(*ast.GenDecl); ok && name == "errors.go" && d.Tok == token.VAR {
					return false // the catalogue itself
				}
				if fd, ok := n.(*ast.FuncDecl); ok && name == "errors.go" && fd.Name.Name == "With" {
					return false
				}
				cl, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if id, ok := cl.Type.(*ast.Ident); ok && id.Name == "Error" {
					t.Errorf("%s: an HTTP error outside the catalogue", fset.Position(cl.Pos()))
				}
				return true
			})
		}
	}
}

// The other routes are bounded per client too, and any route that
// answers before reading a body (an unknown path, a refusal) answers at
// once instead of waiting for a body sent slowly on purpose.
func TestServer_OtherRoutesBoundedPerClientAndNeverWaitForUnreadBodies(t *testing.T) {
	ts := newTestServer(t, serverConfig{otherShare: 2, extra: func(s *Server) {
		s.Handle("POST /read", func(w http.ResponseWriter, r *http.Request) error {
			_, err := io.ReadAll(r.Body)
			return err
		})
	}})
	for range 2 {
		rawPost(t, ts, "127.0.0.2", "/read", nil, 100, []byte("{"))
	}
	waitFor := time.Now().Add(5 * time.Second)
	for ts.srv.others.clients() != 1 || ts.srv.inflight.Load() != 2 {
		if time.Now().After(waitFor) {
			t.Fatalf("the slow bodies are not open: %d in flight", ts.srv.inflight.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	third := rawPost(t, ts, "127.0.0.2", "/read", nil, 100, []byte("{"))
	if a := readAnswer(t, third, 2*time.Second); a.status != http.StatusTooManyRequests || a.code != "client_busy" || a.retryAfter == "" {
		t.Errorf("third slow body from one address: %+v, want 429 client_busy", a)
	}
	if res := ts.do("GET", "/healthz", nil, nil); res.status != http.StatusOK {
		t.Errorf("healthz: %d", res.status)
	}
	for _, path := range []string{"/nope", "/admin/v1/ping", "/api/v1/inbox"} {
		c := rawPost(t, ts, "127.0.0.3", path, nil, 1000, []byte("{"))
		if a := readAnswer(t, c, 2*time.Second); a.status < 400 {
			t.Errorf("%s with a body that never comes: %+v", path, a)
		}
	}
}

// Bodies of every size class read back whole, declared or not.
func TestReadBody_EverySize(t *testing.T) {
	for _, n := range []int{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 100 << 10, 300 << 10, MaxHookBody} {
		for _, declared := range []bool{true, false} {
			want := []byte(strings.Repeat("x", n))
			r, _ := http.NewRequest(http.MethodPost, "/", io.NopCloser(strings.NewReader(string(want))))
			r.ContentLength = -1
			if declared {
				r.ContentLength = int64(n)
			}
			for range 2 { // the second time from the pool
				r.Body = io.NopCloser(strings.NewReader(string(want)))
				got, release, err := readBody(httptest.NewRecorder(), r, MaxHookBody)
				if err != nil || string(got) != string(want) {
					t.Fatalf("%d bytes (declared %v): %d bytes, %v", n, declared, len(got), err)
				}
				if cap(got) > bufferSize(n+1) && declared {
					t.Errorf("%d bytes: a buffer of %d, counted as %d", n, cap(got), bufferSize(n+1))
				}
				release()
			}
		}
	}
}

// Requests that come through a proxy nobody named are said, once, to
// count as that proxy.
func TestInbound_UnnamedProxyIsLoggedOnce(t *testing.T) {
	ts := newTestServer(t, serverConfig{hooks: []Hook{stdHook("ci")}})
	for range 3 {
		ts.do("POST", "/hooks/nope", http.Header{"X-Forwarded-For": {"198.51.100.7"}}, []byte("{}"))
	}
	if n := strings.Count(ts.logs.String(), "server.trusted_proxies is empty"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, ts.logs.String())
	}
	if strings.Contains(ts.logs.String(), "198.51.100.7") {
		t.Error("the forwarded address is logged")
	}
}
