package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// flaky is a webhook receiver whose answer the test sets.
type flaky struct {
	srv    *httptest.Server
	status atomic.Int64
	hits   atomic.Int64
}

func newFlaky(t *testing.T, status int) *flaky {
	t.Helper()
	f := &flaky{}
	f.status.Store(int64(status))
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		f.hits.Add(1)
		w.WriteHeader(int(f.status.Load()))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// consoleRig is a running service for the console tests: a declared RSS
// task (its feed URL carries a token), the flaky webhook recipient ops,
// and an inbox address no page may show.
type consoleRig struct {
	p       *proc
	dataDir string
	feed    *feed
	ops     *flaky
}

const (
	feedToken    = "feedtoken-5e1d"
	hiddenInbox  = "inbox:console:carol"
	hiddenPerson = "console:carol"
)

func newConsoleRig(t *testing.T, extraTasks ...string) *consoleRig {
	t.Helper()
	f := newFeed(t)
	ops := newFlaky(t, http.StatusInternalServerError)
	cfg := adjustExample(t, freeAddr(t), map[string]string{
		"recipients:\n": "recipients:\n  ops:\n    webhook: {url: \"" + ops.srv.URL + "/in\", secret: \"" + recipientSecret + "\", idempotent: false}\n",
		"tasks: []": "tasks:\n  - id: news\n    name: Omni news\n    source: {kind: rss, url: \"" + f.url() + "?token=" + feedToken + "\"}\n" +
			"    schedule: every 30m\n    notify: [admin-inbox, \"" + hiddenInbox + "\"]\n" + strings.ReplaceAll(strings.Join(extraTasks, ""), "FEED", f.srv.URL),
	})
	p, dataDir := startServe(t, cfg)
	return &consoleRig{p: p, dataDir: dataDir, feed: f, ops: ops}
}

// login asks the CLI for a sign-in link.
func (r *consoleRig) login(t *testing.T, args ...string) consoleLogin {
	t.Helper()
	var out consoleLogin
	cliJSON(t, r.dataDir, &out, append([]string{"console", "login"}, args...)...)
	if !strings.HasPrefix(out.Link, r.p.url("/console#code=hcc_")) || out.Principal != "console:admin" {
		t.Fatalf("console login answered %+v", out)
	}
	return out
}

// signIn opens a fresh sign-in link in tab and waits for the console.
func (r *consoleRig) signIn(t *testing.T, tab context.Context) {
	t.Helper()
	link := r.login(t).Link
	open(t, tab, link)
	waitJS(t, tab, "the console after sign-in", `!document.getElementById("app").hidden && document.getElementById("who").innerText.includes("console:admin")`)
	if href := eval[string](t, tab, "location.href"); strings.Contains(href, "hcc_") {
		t.Errorf("the sign-in code stays in the address bar: %s", href)
	}
	if c := eval[string](t, tab, "document.cookie"); c != "" {
		t.Errorf("the page's script can read cookies %q; the session cookie must be HttpOnly", c)
	}
}

// requestWatch has console:alice ask for a watch and returns its request id.
func requestWatch(t *testing.T, dataDir, feedURL string) string {
	t.Helper()
	out, errOut, code := chatCLI(t, dataDir, "alice", "/watch "+feedURL+" every 1h\n")
	rid := reRequest.FindString(out)
	if code != 0 || rid == "" {
		t.Fatalf("chat exit %d, no request id\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	return rid
}

func taskState(t *testing.T, dataDir, id string) (string, string) {
	t.Helper()
	var d struct {
		State    string `json:"state"`
		Decision *struct {
			By string `json:"by"`
		} `json:"decision"`
	}
	out := cli(t, dataDir, "tasks", "show", id, "--json")
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("tasks show --json: %v\n%s", err, out)
	}
	by := ""
	if d.Decision != nil {
		by = d.Decision.By
	}
	return d.State, by
}

func TestConsole_SignInWithLinkApproveTellsRequesterInChat(t *testing.T) {
	r := newConsoleRig(t)
	rid := requestWatch(t, r.dataDir, r.feed.url())
	tab := browserTab(t)
	r.signIn(t, tab)

	waitJS(t, tab, "the pending request", `document.getElementById("pending").innerText.includes(`+jsString(rid)+`)`)
	card := `//ul[@id="pending"]/li[contains(., "` + rid + `")]`
	if got := textOf(t, tab, "#pending"); !strings.Contains(got, "console:alice") || !strings.Contains(got, "127.0.0.1") {
		t.Errorf("the pending card lacks who asked and the host:\n%s", got)
	}
	do(t, tab, chromedp.Click(card+`//button[contains(@class, "primary")]`))
	waitJS(t, tab, "the approval confirmed", `document.getElementById("status").innerText.includes("Approved `+rid+`")`)
	waitJS(t, tab, "the request gone from pending", `!document.getElementById("pending").innerText.includes(`+jsString(rid)+`)`)

	tid := "t-" + strings.TrimPrefix(rid, "r-")
	if state, by := taskState(t, r.dataDir, tid); state != "active" || by != "console:admin" {
		t.Errorf("after the console's approval: state %q by %q, want active by console:admin", state, by)
	}
	var aliceOut string
	eventually(t, "console:alice told of the decision in chat", func() bool {
		o, _, _ := chatCLI(t, r.dataDir, "alice", "")
		aliceOut += o
		return strings.Contains(aliceOut, "Your request "+rid+" was approved by console:admin")
	})
}

func TestConsole_WrongExpiredAndReusedCodesAreRefused(t *testing.T) {
	r := newConsoleRig(t)
	tab := browserTab(t)
	refused := func(what string) {
		t.Helper()
		waitJS(t, tab, what+" refused", `!document.getElementById("signin").hidden && document.getElementById("error").innerText.includes("wrong, used or expired")`)
		if !eval[bool](t, tab, `document.getElementById("app").hidden`) {
			t.Errorf("%s: the console shows without a session", what)
		}
	}

	open(t, tab, r.p.url("/console#code=hcc_0123456789abcdef0123456789abcdef0123456789abcdef"))
	refused("a wrong code")

	// A code typed into the form goes the same way.
	do(t, tab, chromedp.SendKeys("#code", "hcc_not-a-code"), chromedp.Click("#signin-form button"))
	refused("a wrong typed code")

	short := r.login(t, "--valid", "1s")
	time.Sleep(1500 * time.Millisecond) // the code's own lifetime, set to its minimum
	open(t, tab, short.Link)
	refused("an expired code")

	// A link works once: the second browser to open it is refused.
	link := r.login(t).Link
	open(t, tab, link)
	waitJS(t, tab, "signed in", `!document.getElementById("app").hidden`)
	other := browserTab(t)
	open(t, other, link)
	waitJS(t, other, "a used code refused", `document.getElementById("error").innerText.includes("wrong, used or expired")`)

	// logout --all ends the session that worked.
	cli(t, r.dataDir, "console", "logout", "--all")
	do(t, tab, chromedp.Click("#refresh", chromedp.NodeVisible))
	waitJS(t, tab, "signed out after logout --all", `!document.getElementById("signin").hidden && document.getElementById("error").innerText.includes("signed out")`)
}

func TestConsole_RedeliverUnknownPushAfterConfirming(t *testing.T) {
	r := newConsoleRig(t)
	_, _, _ = run(t, "send-test", "ops", "--data-dir", r.dataDir) // ops answers 500: unknown
	var fx []effectRow
	eventually(t, "the test push unknown", func() bool {
		cliJSON(t, r.dataDir, &fx, "ledger", "show", "test")
		return len(fx) == 1 && fx[0].State == "unknown"
	})
	r.ops.status.Store(http.StatusNoContent)

	tab := browserTab(t)
	r.signIn(t, tab)
	waitJS(t, tab, "the unknown push", `document.getElementById("unknown").innerText.includes("Redeliver")`)
	if got := textOf(t, tab, "#unknown"); !strings.Contains(got, "ops") || !strings.Contains(got, fx[0].Key) {
		t.Errorf("the unknown card lacks the recipient's name or the key:\n%s", got)
	}
	redeliver := `//ul[@id="unknown"]/li[contains(., "` + fx[0].Key + `")]//button`

	// Cancel first: nothing is sent.
	do(t, tab, chromedp.Click(redeliver))
	waitJS(t, tab, "the confirmation", `document.getElementById("confirm").open`)
	showcase(t, tab, "confirm")
	if got := textOf(t, tab, "#confirm"); !strings.Contains(got, "may already have arrived") || !strings.Contains(got, "ops") {
		t.Errorf("the confirmation does not warn plainly:\n%s", got)
	}
	do(t, tab, chromedp.Click("#confirm-cancel"))
	waitJS(t, tab, "the confirmation closed", `!document.getElementById("confirm").open`)
	time.Sleep(300 * time.Millisecond)
	if n := r.ops.hits.Load(); n != 1 {
		t.Fatalf("cancelled redelivery reached the recipient: %d posts", n)
	}

	// Confirm with the keyboard this time.
	do(t, tab, chromedp.Click(redeliver))
	waitJS(t, tab, "the confirmation again", `document.getElementById("confirm").open`)
	do(t, tab, chromedp.Focus("#confirm-ok"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, tab, "redelivery confirmed", `document.getElementById("status").innerText.includes("queued again")`)
	eventually(t, "the redelivered push completed", func() bool {
		cliJSON(t, r.dataDir, &fx, "ledger", "show", "test")
		return len(fx) == 1 && fx[0].State == "completed" && r.ops.hits.Load() == 2
	})

	// The delivery view charts both attempts under the webhook kind.
	do(t, tab, chromedp.Click("#tab-delivery"))
	// The view reads the ledger at most every few seconds: refresh until
	// it has read it after the redelivery completed.
	for deadline := time.Now().Add(browserStep); !eval[bool](t, tab, `document.getElementById("delivery-charts").innerText.includes("webhook: 2 attempts")`); {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery view never showed both attempts:\n%s", textOf(t, tab, "#view-delivery"))
		}
		time.Sleep(500 * time.Millisecond)
		do(t, tab, chromedp.Click("#refresh"))
	}
	showcase(t, tab, "delivery")
	fig := `[...document.querySelectorAll("#delivery-charts figure")].find((f) => f.innerText.includes("webhook:"))`
	bars := eval[int](t, tab, fig+`.querySelectorAll("svg rect.bar").length`)
	legend := eval[string](t, tab, fig+`.querySelector(".legend").innerText`)
	if bars < 1 || !strings.Contains(legend, "completed 1") || !strings.Contains(legend, "unknown 1") {
		t.Errorf("delivery chart: %d bars, legend %q\n%s", bars, legend, textOf(t, tab, "#view-delivery"))
	}
}

// consoleClient signs in over plain HTTP as the page does and returns a
// client holding the session cookie, the CSRF token and the Set-Cookie line.
func consoleClient(t *testing.T, r *consoleRig) (*http.Client, string, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	code := r.login(t).Code
	req, _ := http.NewRequest(http.MethodPost, r.p.url("/console/api/login"), strings.NewReader(`{"code":"`+code+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://"+r.p.addr)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct {
		CSRF string `json:"csrf"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&s) != nil || s.CSRF == "" {
		t.Fatalf("login over HTTP: %d", resp.StatusCode)
	}
	return hc, s.CSRF, resp.Header.Get("Set-Cookie")
}

// post sends a console POST and returns its status and error code.
func consolePost(t *testing.T, hc *http.Client, u string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error.Code
}

func TestConsole_CSRFAndForeignOriginPostsAreRefused(t *testing.T) {
	r := newConsoleRig(t)
	rid := requestWatch(t, r.dataDir, r.feed.url())
	tid := "t-" + strings.TrimPrefix(rid, "r-")
	hc, csrf, setCookie := consoleClient(t, r)
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/console"} {
		if !strings.Contains(setCookie, want) {
			t.Errorf("session cookie %q lacks %s", setCookie, want)
		}
	}
	if strings.Contains(setCookie, "Secure") {
		t.Errorf("session cookie %q is Secure on plain http to loopback: the browser would drop it", setCookie)
	}
	self := "http://" + r.p.addr
	approve := r.p.url("/console/api/approve")
	body := `{"id":"` + rid + `"}`
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"no CSRF token", map[string]string{"Origin": self}, "csrf"},
		{"wrong CSRF token", map[string]string{"Origin": self, "X-Herald-CSRF": wrongToken(csrf)}, "csrf"},
		{"foreign Origin", map[string]string{"Origin": "http://evil.example", "X-Herald-CSRF": csrf}, "origin"},
		{"no Origin", map[string]string{"X-Herald-CSRF": csrf}, "origin"},
		{"cross-site fetch", map[string]string{"Origin": self, "X-Herald-CSRF": csrf, "Sec-Fetch-Site": "cross-site"}, "origin"},
	} {
		if status, code := consolePost(t, hc, approve, c.hdr, body); status != http.StatusForbidden || code != c.want {
			t.Errorf("%s: %d %q, want 403 %q", c.name, status, code, c.want)
		}
	}
	if status, code := consolePost(t, hc, r.p.url("/console/api/login"), map[string]string{"Origin": "http://evil.example"}, `{"code":"`+r.login(t).Code+`"}`); status != http.StatusForbidden || code != "origin" {
		t.Errorf("login from a foreign origin: %d %q", status, code)
	}
	if state, _ := taskState(t, r.dataDir, tid); state != "pending_approval" {
		t.Fatalf("a refused POST changed the request: %s", state)
	}

	// A real browser, signed in, visits another site whose page posts to
	// the console: the cookie is not sent and the origin is foreign.
	tab := browserTab(t)
	r.signIn(t, tab)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><form id=f method=post enctype=text/plain action="`+approve+`">`+
			`<input name='{"id":"`+rid+`","x":"' value='"}'></form><script>
fetch(`+jsString(approve)+`, {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: `+jsString(body)+`})
  .then(() => { document.title = "fetched"; document.getElementById("f").submit(); }, () => { document.title = "fetched"; document.getElementById("f").submit(); });
</script>`)
	}))
	defer evil.Close()
	open(t, tab, evil.URL+"/page")
	eventually(t, "the foreign form's answer", func() bool {
		href, err := chromedp.Run(tab, chromedp.Evaluate[string]("location.href"))
		return err == nil && strings.Contains(href, "/console/api/approve")
	})
	if body := textOf(t, tab, "body"); !strings.Contains(body, `"origin"`) && !strings.Contains(body, `"signed_out"`) {
		t.Errorf("the foreign form's POST was not refused: %s", body)
	}
	if state, _ := taskState(t, r.dataDir, tid); state != "pending_approval" {
		t.Fatalf("a foreign page approved the request: %s", state)
	}

	// The genuine page's request with its token works.
	if status, code := consolePost(t, hc, approve, map[string]string{"Origin": self, "X-Herald-CSRF": csrf}, body); status != http.StatusOK {
		t.Fatalf("the right POST: %d %q", status, code)
	}
}

func TestConsole_TasksViewShowsScopeRecipientsScheduleAndRunsChart(t *testing.T) {
	r := newConsoleRig(t)
	waitBaseline(t, r.dataDir, "news")
	// A run asked for while the baseline is still finishing joins it, so
	// ask until a check of its own has run.
	eventually(t, "a check after the baseline", func() bool {
		return !strings.Contains(cli(t, r.dataDir, "tasks", "run", "news"), "baseline")
	})
	tab := browserTab(t)
	r.signIn(t, tab)
	do(t, tab, chromedp.Click("#tab-tasks"))
	waitJS(t, tab, "the task list", `document.getElementById("task-list").innerText.includes("Omni news")`)
	do(t, tab, chromedp.Click(`//ul[@id="task-list"]//button[contains(., "Omni news")]`))
	waitJS(t, tab, "the task's details", `!document.getElementById("detail").hidden && document.querySelectorAll("#detail-runs tbody tr").length >= 2`)
	showcase(t, tab, "task")
	facts := textOf(t, tab, "#detail-facts")
	for _, want := range []string{"every 30m", "admin-inbox", "an inbox (inbox)", "Approved scope", "watch", "config", "Next run", "/feed.xml"} {
		if !strings.Contains(facts, want) {
			t.Errorf("task details lack %q:\n%s", want, facts)
		}
	}
	if n := eval[int](t, tab, `document.querySelectorAll("#detail-chart svg rect.bar").length`); n < 2 {
		t.Errorf("the runs chart has %d bars, want one per run (2)", n)
	}
	if label := eval[string](t, tab, `document.querySelector("#detail-chart svg").getAttribute("aria-label")`); !strings.Contains(label, "2 runs") {
		t.Errorf("the chart's label %q does not say what it shows", label)
	}

	// Filters: a state no task is in empties the list.
	eval[bool](t, tab, `(() => { const s = document.getElementById("f-state"); s.value = "paused"; s.dispatchEvent(new Event("change")); return true; })()`)
	waitJS(t, tab, "the filtered list empty", `!document.getElementById("tasks-empty").hidden`)
	eval[bool](t, tab, `(() => { const s = document.getElementById("f-state"); s.value = "active"; s.dispatchEvent(new Event("change")); return true; })()`)
	waitJS(t, tab, "the active task listed", `document.getElementById("task-list").innerText.includes("Omni news")`)
}

func TestConsole_ChineseFollowsTheBrowserAndSwitches(t *testing.T) {
	r := newConsoleRig(t)
	tab := browserTab(t)
	do(t, tab, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
			UserAgent: "Mozilla/5.0 (X11; Linux x86_64) herald-test", AcceptLanguage: "zh-CN,zh"})
		return err
	}))
	r.signIn(t, tab)
	showcase(t, tab, "zh")
	if h := textOf(t, tab, "h1"); h != "herald 控制台" {
		t.Errorf("a zh browser sees %q", h)
	}
	if tab := textOf(t, tab, "#tab-attention"); tab != "待处理" {
		t.Errorf("attention tab in zh: %q", tab)
	}
	if lang := eval[string](t, tab, "document.documentElement.lang"); lang != "zh-CN" {
		t.Errorf("html lang = %q", lang)
	}
	do(t, tab, chromedp.Click("#lang"))
	waitJS(t, tab, "English after switching", `document.querySelector("h1").innerText === "herald console"`)
	do(t, tab, chromedp.Reload())
	waitJS(t, tab, "the choice kept", `document.querySelector("h1").innerText === "herald console" && !document.getElementById("app").hidden`)
}

func TestConsole_PhoneWidthKeyboardAndNoJavaScript(t *testing.T) {
	r := newConsoleRig(t)
	requestWatch(t, r.dataDir, r.feed.url())
	tab := browserTab(t)
	do(t, tab, chromedp.EmulateViewport(375, 740))
	r.signIn(t, tab)
	waitJS(t, tab, "a pending card", `document.querySelectorAll("#pending li.card").length === 1`)
	showcase(t, tab, "phone")
	if w := eval[[]int](t, tab, "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"); w[0] > w[1] {
		t.Errorf("at phone width the page scrolls sideways: %d px wide in %d", w[0], w[1])
	}
	// The tabs work from the keyboard.
	do(t, tab, chromedp.Focus("#tab-attention"), chromedp.KeyEvent(kb.ArrowRight))
	waitJS(t, tab, "tasks selected by the arrow key", `document.getElementById("tab-tasks").getAttribute("aria-selected") === "true" && document.activeElement.id === "tab-tasks"`)
	do(t, tab, chromedp.KeyEvent(kb.ArrowRight))
	waitJS(t, tab, "delivery selected", `!document.getElementById("view-delivery").hidden`)

	plain := browserTab(t)
	do(t, plain, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}), chromedp.Navigate(r.p.url("/console")))
	body := textOf(t, plain, "body")
	if !strings.Contains(body, "The herald console needs JavaScript") || !strings.Contains(body, "需要 JavaScript") {
		t.Errorf("without JavaScript the page does not say so:\n%s", body)
	}
}

// TestI10_ConsoleShowsRecipientsAsNamesOnly reads every console route a
// signed-in admin can read and the page itself: no recipient address, no
// token from a source URL, no configured secret.
func TestI10_ConsoleShowsRecipientsAsNamesOnly(t *testing.T) {
	r := newConsoleRig(t)
	waitBaseline(t, r.dataDir, "news")
	_, _, _ = run(t, "send-test", "ops", "--data-dir", r.dataDir)
	rid := requestWatch(t, r.dataDir, r.feed.url()+"?key="+feedToken)
	hc, _, _ := consoleClient(t, r)
	var all strings.Builder
	for _, path := range []string{"/console", "/console/app.js", "/console/api/session", "/console/api/attention",
		"/console/api/tasks", "/console/api/task?id=news", "/console/api/task?id=" + rid, "/console/api/delivery?hours=72"} {
		resp, err := hc.Get(r.p.url(path))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, cc)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
		all.Write(b)
	}
	got := all.String()
	if !strings.Contains(got, "admin-inbox") || !strings.Contains(got, `"role":"inbox"`) || !strings.Contains(got, "Omni news") {
		t.Fatalf("the console's JSON lacks what it should show:\n%s", got)
	}
	for _, bad := range append([]string{hiddenInbox, hiddenPerson, "inbox:console:admin", feedToken, "whsec_", r.ops.srv.URL},
		secretsIn(got)...) {
		if strings.Contains(got, bad) {
			t.Errorf("the console shows %q", bad)
		}
	}
	// The admin API keeps refusing browsers.
	req, _ := http.NewRequest(http.MethodPost, r.p.url("/admin/v1/tasks.list"), strings.NewReader("{}"))
	req.Header.Set("Origin", "http://"+r.p.addr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("admin API with a browser Origin: %d, want 403", resp.StatusCode)
	}
}

// TestInboxPage_TokenFlowAndWasTitleInABrowser: the inbox page asks for a
// token, lists the inbox with it, shows what a changed item was called
// before, forgets the token on request and asks again for a wrong one.
func TestInboxPage_TokenFlowAndWasTitleInABrowser(t *testing.T) {
	fx := newFixture(t)
	p, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	fx.feed.mu.Lock()
	doc := string(fx.feed.doc)
	i := strings.Index(doc, "<item>")
	j := strings.Index(doc[i:], "<title>") + i + len("<title>")
	k := strings.Index(doc[j:], "</title>") + j
	old := doc[j:k]
	fx.feed.doc = []byte(doc[:j] + "Renamed episode" + doc[k:])
	fx.feed.mu.Unlock()
	cli(t, dataDir, "tasks", "run", "news")
	var tok struct {
		Token string `json:"token"`
		URL   string `json:"url"`
	}
	cliJSON(t, dataDir, &tok, "inbox", "token", "console:admin")

	tab := browserTab(t)
	open(t, tab, p.url("/inbox"))
	waitJS(t, tab, "the token form", `!document.getElementById("login").hidden`)
	do(t, tab, chromedp.SendKeys("#token", tok.Token), chromedp.Click("#login button"))
	waitJS(t, tab, "the changed item", `document.getElementById("items").innerText.includes("Renamed episode")`)
	items := textOf(t, tab, "#items")
	oldShown := strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#39;", "'", "&quot;", `"`).Replace(old)
	if !strings.Contains(items, "changed") || !strings.Contains(items, "(was: "+strings.TrimSpace(oldShown)+")") {
		t.Errorf("the changed item does not say what it was (%q):\n%s", old, items)
	}
	if who := textOf(t, tab, "#who"); !strings.Contains(who, "console:admin") {
		t.Errorf("who: %q", who)
	}
	if href := eval[string](t, tab, "location.href"); strings.Contains(href, tok.Token) {
		t.Errorf("the token is in the URL: %s", href)
	}

	do(t, tab, chromedp.Click("#forget"))
	waitJS(t, tab, "the token form after Forget token", `!document.getElementById("login").hidden && document.getElementById("inbox").hidden`)
	if kept := eval[string](t, tab, `sessionStorage.getItem("herald.inbox.token") || ""`); kept != "" {
		t.Errorf("Forget token kept it: %q", kept)
	}
	do(t, tab, chromedp.SendKeys("#token", "hin_wrong"), chromedp.Click("#login button"))
	waitJS(t, tab, "a wrong token refused", `document.getElementById("error").innerText.includes("not accepted")`)
}

func TestConsole_FailingWatchAndUnreachableRecipientNeedAttention(t *testing.T) {
	r := newConsoleRig(t,
		"  - id: broken\n    name: Locked feed\n    source: {kind: rss, url: \"FEED/denied.xml\"}\n    schedule: every 30m\n    notify: [admin-inbox]\n",
		"  - id: to-ops\n    name: Feed for ops\n    source: {kind: rss, url: \"FEED/feed.xml\"}\n    schedule: every 30m\n    notify: [ops]\n")
	r.ops.status.Store(http.StatusGone) // 410: the receiver is gone for good
	waitBaseline(t, r.dataDir, "to-ops")
	waitBaseline(t, r.dataDir, "broken")
	r.feed.addItem("ep-new", "A new episode")
	cli(t, r.dataDir, "tasks", "run", "to-ops")
	eventually(t, "ops marked unreachable", func() bool {
		var d struct {
			Unreachable []string `json:"unreachable"`
		}
		out := cli(t, r.dataDir, "tasks", "show", "to-ops", "--json")
		return json.Unmarshal([]byte(out), &d) == nil && len(d.Unreachable) == 1
	})

	tab := browserTab(t)
	r.signIn(t, tab)
	waitJS(t, tab, "the failing watch", `document.getElementById("failing").innerText.includes("Locked feed")`)
	failing := textOf(t, tab, "#failing")
	for _, want := range []string{"class: auth", "failed 1 times in a row", "broken"} {
		if !strings.Contains(failing, want) {
			t.Errorf("the failing card lacks %q:\n%s", want, failing)
		}
	}
	waitJS(t, tab, "the unreachable recipient", `document.getElementById("unreachable").innerText.includes("Feed for ops")`)
	if got := textOf(t, tab, "#unreachable"); !strings.Contains(got, "ops") {
		t.Errorf("the unreachable card does not name the recipient:\n%s", got)
	}
	// The 410 disabled ops (SPEC §21): the recipients list says so, and
	// Enable turns it back on.
	waitJS(t, tab, "the disabled recipient", `document.getElementById("recipient-states").innerText.includes("disabled (gone)")`)
	do(t, tab, chromedp.Click(`//ul[@id="recipient-states"]/li[contains(., "ops")]//button[contains(., "Enable")]`))
	waitJS(t, tab, "the recipient enabled", `document.getElementById("status").innerText.includes("ops is enabled again")`)
	waitJS(t, tab, "the list after enable", `!document.getElementById("recipient-states").innerText.includes("disabled")`)
	var rows []recipientRow
	cliJSON(t, r.dataDir, &rows, "recipients", "list")
	for _, row := range rows {
		if row.Name == "ops" && row.State != "enabled" {
			t.Errorf("after Enable in the console: %+v", row)
		}
	}
	// Details opens the task in the tasks view.
	do(t, tab, chromedp.Click(`//ul[@id="failing"]/li[contains(., "Locked feed")]//button`))
	waitJS(t, tab, "the broken task's details", `!document.getElementById("detail").hidden && document.getElementById("detail-h").innerText.includes("broken")`)
	if got := textOf(t, tab, "#detail-runs"); !strings.Contains(got, "failed (auth)") {
		t.Errorf("the runs table lacks the failed run's class:\n%s", got)
	}
}

// wrongToken is tok with its first character changed, never tok itself.
func wrongToken(tok string) string {
	if strings.HasPrefix(tok, "0") {
		return "1" + tok[1:]
	}
	return "0" + tok[1:]
}

// TestConsole_RefusedAttemptsAreNotCalledReachable: while a recipient
// refuses connections, the console names it under unreachable recipients
// with its refused attempts, never says every recipient is reachable, and
// its delivery tab names the recipient beside its attempts.
func TestConsole_RefusedAttemptsAreNotCalledReachable(t *testing.T) {
	r := newConsoleRig(t,
		"  - id: to-ops\n    name: Feed for ops\n    source: {kind: rss, url: \"FEED/feed.xml\"}\n    schedule: every 30m\n    notify: [ops]\n")
	waitBaseline(t, r.dataDir, "to-ops")
	r.ops.srv.Close() // the receiver refuses connections from now on
	r.feed.addItem("ep-new", "A new episode")
	cli(t, r.dataDir, "tasks", "run", "to-ops")
	eventually(t, "a refused attempt in the ledger", func() bool {
		var fxs []effectRow
		cliJSON(t, r.dataDir, &fxs, "ledger", "show", "to-ops")
		for _, f := range fxs {
			if f.State == "pending" && f.Attempts > 0 && f.Error != "" {
				return true
			}
		}
		return false
	})

	tab := browserTab(t)
	r.signIn(t, tab)
	waitJS(t, tab, "the refusing recipient", `document.getElementById("unreachable").innerText.includes("attempts refused")`)
	got := textOf(t, tab, "#unreachable")
	if !strings.Contains(got, "ops") || !strings.Contains(got, "connect_failed") {
		t.Errorf("the card does not name the recipient and why:\n%s", got)
	}
	if strings.Contains(got, "Every recipient is reachable") {
		t.Errorf("the console calls every recipient reachable:\n%s", got)
	}
	// The delivery tab names the recipient beside its attempts.
	do(t, tab, chromedp.Click("#tab-delivery"))
	waitJS(t, tab, "the delivery tab's recipients", `document.getElementById("delivery-recipients").innerText.includes("connect_failed")`)
	if rows := textOf(t, tab, "#delivery-recipients"); !strings.Contains(rows, "ops") {
		t.Errorf("the delivery tab does not name the recipient:\n%s", rows)
	}
}

// TestConsole_TaskActionsPauseResumeRunDelete: from a task's details an
// admin pauses, resumes, checks now and (after confirming) deletes it, as
// chat and the CLI do; the list shows each task's source.
func TestConsole_TaskActionsPauseResumeRunDelete(t *testing.T) {
	r := newConsoleRig(t)
	out, errOut, code := chatCLI(t, r.dataDir, "admin", "/watch "+r.feed.url()+"?v=2 every 1h name \"Console task\"\n")
	tid := reTaskID.FindString(out)
	if code != 0 || tid == "" {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	waitBaseline(t, r.dataDir, tid)
	tab := browserTab(t)
	r.signIn(t, tab)
	do(t, tab, chromedp.Click("#tab-tasks"))
	waitJS(t, tab, "the task list", `document.getElementById("task-list").innerText.includes("Console task")`)
	if list := textOf(t, tab, "#task-list"); !strings.Contains(list, "/feed.xml") {
		t.Errorf("the task list does not show sources:\n%s", list)
	}
	do(t, tab, chromedp.Click(`//ul[@id="task-list"]//button[contains(., "Console task")]`))
	press := func(label string) {
		t.Helper()
		waitJS(t, tab, "the "+label+" button", `[...document.querySelectorAll("#detail-actions button")].some(b => b.innerText === "`+label+`")`)
		do(t, tab, chromedp.Click(`//div[@id="detail-actions"]//button[.="`+label+`"]`))
	}
	stateIs := func(want string) {
		t.Helper()
		eventually(t, tid+" is "+want, func() bool { st, _ := taskState(t, r.dataDir, tid); return st == want })
	}
	press("Pause")
	stateIs("paused")
	press("Resume")
	stateIs("active")
	press("Check now")
	waitJS(t, tab, "the check's outcome", `/Console task checked: (ok|unchanged)\./.test(document.body.innerText)`)
	press("Delete")
	waitJS(t, tab, "the confirmation", `document.getElementById("confirm").open`)
	do(t, tab, chromedp.Click("#confirm-ok"))
	eventually(t, tid+" is deleted", func() bool { _, ok := listTasks(t, r.dataDir)[tid]; return !ok })
}
