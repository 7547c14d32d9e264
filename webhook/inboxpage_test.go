package webhook

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// newPageServer is the test server with the inbox page mounted as serve
// mounts it, next to the inbox API.
func newPageServer(t *testing.T) *testServer {
	t.Helper()
	return newTestServer(t, serverConfig{extra: MountInboxPage})
}

// embedded returns one file of the page as the binary carries it.
func embedded(t *testing.T, name string) string {
	t.Helper()
	b, err := inboxPageFiles.ReadFile("inboxpage/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// directives splits a Content-Security-Policy into directive → sources.
func directives(csp string) map[string]string {
	out := map[string]string{}
	for d := range strings.SplitSeq(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if name != "" {
			out[name] = strings.TrimSpace(value)
		}
	}
	return out
}

// assertPageHeaders checks the headers every response of the page carries.
func assertPageHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	want := map[string]string{
		"default-src":     "'none'",
		"script-src":      "'self'",
		"style-src":       "'self'",
		"connect-src":     "'self'",
		"frame-ancestors": "'none'",
		"base-uri":        "'none'",
		"form-action":     "'none'",
	}
	got := directives(h.Get("Content-Security-Policy"))
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s: CSP %s = %q, want %q (policy %q)", what, name, got[name], v, h.Get("Content-Security-Policy"))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: CSP has unexpected directive %q", what, name)
		}
	}
	for k, v := range map[string]string{
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"Cache-Control":          "no-store",
	} {
		if h.Get(k) != v {
			t.Errorf("%s: %s = %q, want %q", what, k, h.Get(k), v)
		}
	}
	if h.Get("Set-Cookie") != "" {
		t.Errorf("%s: sets a cookie", what)
	}
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("%s: answers CORS", what)
	}
}

func TestInboxPage_ServedStaticWithSecurityHeaders(t *testing.T) {
	ts := newPageServer(t)
	const principal = "telegram:10001"
	tok, err := InboxTokens{KV: ts.store.Channels()}.Issue(context.Background(), principal)
	if err != nil {
		t.Fatal(err)
	}
	inboxWith(t, ts, principal, 3)
	// A browser that already holds a token, or a link that carries one,
	// still gets the same static page: nothing is echoed back.
	for _, tc := range []struct {
		name   string
		path   string
		header http.Header
	}{
		{"plain", "/inbox", nil},
		{"with bearer", "/inbox", bearer(tok)},
		{"token in query", "/inbox?token=" + tok + "&principal=" + principal, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := ts.do("GET", tc.path, tc.header, nil)
			if res.status != http.StatusOK {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
			if ct := res.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			assertPageHeaders(t, tc.path, res.header)
			if res.raw != embedded(t, "index.html") {
				t.Error("body is not the embedded page")
			}
			for _, s := range []string{tok, principal, "item 0"} {
				if strings.Contains(res.raw, s) {
					t.Errorf("page contains %q", s)
				}
			}
		})
	}
	t.Run("HEAD", func(t *testing.T) {
		res := ts.do("HEAD", "/inbox", nil, nil)
		if res.status != http.StatusOK || res.raw != "" || res.header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("HEAD: %d %q %q", res.status, res.header.Get("Content-Type"), res.raw)
		}
		assertPageHeaders(t, "HEAD /inbox", res.header)
	})
	assertNoSecrets(t, ts.logs.String(), tok)
}

func TestInboxPage_OnlyGETAndHEAD(t *testing.T) {
	ts := newPageServer(t)
	for _, path := range []string{"/inbox", "/inbox/app.js", "/inbox/style.css"} {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			res := ts.do(method, path, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte("token=x"))
			if res.status != http.StatusMethodNotAllowed || res.code() != "method_not_allowed" {
				t.Errorf("%s %s: %d %s", method, path, res.status, res.raw)
			}
			if allow := res.header.Get("Allow"); allow != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q", method, path, allow)
			}
		}
	}
}

func TestInboxPage_Assets(t *testing.T) {
	ts := newPageServer(t)
	for _, tc := range []struct {
		path, ctype, file string
	}{
		{"/inbox/app.js", "text/javascript; charset=utf-8", "app.js"},
		{"/inbox/style.css", "text/css; charset=utf-8", "style.css"},
	} {
		res := ts.do("GET", tc.path, nil, nil)
		if res.status != http.StatusOK || res.header.Get("Content-Type") != tc.ctype {
			t.Errorf("%s: %d %q, want 200 %q", tc.path, res.status, res.header.Get("Content-Type"), tc.ctype)
		}
		if res.raw != embedded(t, tc.file) {
			t.Errorf("%s: body is not the embedded file", tc.path)
		}
		assertPageHeaders(t, tc.path, res.header)
	}
	// Only the listed assets exist: the page itself is not a second URL,
	// and nothing else in the package can be read through the page route.
	for _, path := range []string{"/inbox/index.html", "/inbox/inboxpage.go", "/inbox/nope.js", "/inbox/%2e%2e%2finbox.go"} {
		if res := ts.do("GET", path, nil, nil); res.status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, res.status)
		}
	}
}

// TestInboxPage_EveryFileIsEmbeddedAndServed keeps the directory, the
// go:embed line and the served names in step: a file added to the
// directory but not embedded or not served would be a broken page.
func TestInboxPage_EveryFileIsEmbeddedAndServed(t *testing.T) {
	entries, err := os.ReadDir("inboxpage")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk, want []string
	for _, e := range entries {
		onDisk = append(onDisk, e.Name())
	}
	want = append(want, "index.html")
	for name := range pageAssets {
		want = append(want, name)
	}
	sort.Strings(want)
	if !slices.Equal(onDisk, want) {
		t.Errorf("inboxpage/ holds %v, served are %v", onDisk, want)
	}
	for _, name := range want {
		if _, err := fs.Stat(inboxPageFiles, "inboxpage/"+name); err != nil {
			t.Errorf("%s is not embedded: %v", name, err)
		}
	}
}

// TestInboxPage_SameOriginAndEscaped scans what the browser gets: no URL
// of another origin, no HTML built from strings, no inline script or style
// the policy would block, and the token kept out of URLs, cookies and
// localStorage.
func TestInboxPage_SameOriginAndEscaped(t *testing.T) {
	banned := []string{
		"http://", "https://", // every URL the page uses is same-origin
		"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", // data is rendered with textContent
		"eval(", "new Function", "setTimeout(\"", // no code from strings
		"localStorage", "document.cookie", "indexedDB", // the token lives in sessionStorage only
	}
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		body := embedded(t, name)
		for _, s := range banned {
			if strings.Contains(body, s) {
				t.Errorf("%s contains %q", name, s)
			}
		}
		if strings.Contains(body, "@import") || strings.Contains(body, "url(") {
			t.Errorf("%s loads something through CSS", name)
		}
	}

	page := embedded(t, "index.html")
	ts := newPageServer(t)
	refs := regexp.MustCompile(`(?i)\b(?:src|href|action)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 2 {
		t.Errorf("page references %v, want the script and the style sheet", refs)
	}
	for _, m := range refs {
		ref := m[1]
		if !strings.HasPrefix(ref, "/inbox/") || strings.HasPrefix(ref, "//") {
			t.Errorf("page references %q, not a path on this origin", ref)
			continue
		}
		if res := ts.do("GET", ref, nil, nil); res.status != http.StatusOK {
			t.Errorf("page references %s, which answers %d", ref, res.status)
		}
	}
	scripts := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	if len(scripts) != 1 || !strings.Contains(scripts[0][1], `src="/inbox/app.js"`) || strings.TrimSpace(scripts[0][2]) != "" {
		t.Errorf("page scripts %q, want only the external /inbox/app.js", scripts)
	}
	if regexp.MustCompile(`(?i)<style\b|\sstyle\s*=|\son[a-z]+\s*=`).MatchString(page) {
		t.Error("page has inline style or event handler attributes, which its policy blocks")
	}
	if regexp.MustCompile(`(?i)<input\b[^>]*\bname\s*=`).MatchString(page) {
		t.Error("a named input would be sent in a URL if the form were ever submitted")
	}

	script := embedded(t, "app.js")
	if !strings.Contains(script, "sessionStorage") {
		t.Error("script does not keep the token in sessionStorage")
	}
	// The only query parameters the script sets are the API's paging ones.
	for _, m := range regexp.MustCompile(`\.set\("([^"]+)"`).FindAllStringSubmatch(script, -1) {
		if !slices.Contains([]string{"limit", "before", "unread"}, m[1]) {
			t.Errorf("script sets query parameter %q", m[1])
		}
	}
	if n, api := strings.Count(script, "fetch("), strings.Count(script, "fetch(API + "); n != 1 || api != 1 {
		t.Errorf("script has %d fetch calls, %d of them to API; want exactly one, to API", n, api)
	}
	// Links are built only from URLs that passed the http(s) check.
	if n := strings.Count(script, ".href = "); n != 1 || !strings.Contains(script, "a.href = href;") {
		t.Errorf("script sets href %d times; want once, from httpURL", n)
	}
}

// apiConst returns the string constant name declared in the script.
func apiConst(t *testing.T, script, name string) string {
	t.Helper()
	m := regexp.MustCompile(`const ` + name + ` = ("[^"]*"|\d+);`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("script declares no %s", name)
	}
	return strings.Trim(m[1], `"`)
}

// TestInboxPage_ScriptReadsTheAPIWithAnIssuedToken follows the page end to
// end on one origin: the page names its script, the script names the API
// and the fields it reads, and the API answers a really issued token with
// those fields, pages with before/limit, filters unread, and answers a
// wrong token with the 401 the page turns into "enter it again".
func TestInboxPage_ScriptReadsTheAPIWithAnIssuedToken(t *testing.T) {
	ts := newPageServer(t)
	ctx := context.Background()
	const principal = "feishu:ou_reader"
	tok, err := InboxTokens{KV: ts.store.Channels()}.Issue(ctx, principal)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range []delivery.Item{
		{ID: "a", Title: "Timetable", URL: "https://uni.example/timetable", Change: "changed"},
		{ID: "b", Title: "<img src=x onerror=alert(1)>", URL: "javascript:alert(1)", Change: "new"},
		{ID: "c", Title: "Essay", URL: "https://uni.example/essay", Change: "deadline", Due: t0.Add(48 * time.Hour)},
	} {
		body, err := json.Marshal(delivery.Message{Kind: "watch.changed", TaskName: "uni", Items: []delivery.Item{it}, OccurredAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ts.store.Inbox().Append(ctx, store.InboxItem{
			Principal: principal, EffectKey: "fx_page_" + it.ID, Title: it.Title, Body: body,
			CreatedAt: t0.Add(time.Duration(i) * time.Minute),
		}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.store.Inbox().MarkRead(ctx, principal, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.Inbox().Append(ctx, store.InboxItem{
		Principal: principal, EffectKey: "fx_page_d", Title: "Newest", Body: []byte(`{"kind":"inbound.event","title":"Newest","text":"build passed"}`),
		CreatedAt: t0.Add(time.Hour),
	}, 0); err != nil {
		t.Fatal(err)
	}

	page := ts.do("GET", "/inbox", nil, nil)
	src := regexp.MustCompile(`<script src="([^"]+)"`).FindStringSubmatch(page.raw)
	if src == nil {
		t.Fatal("page names no script")
	}
	script := ts.do("GET", src[1], nil, nil)
	if script.status != http.StatusOK {
		t.Fatalf("script %s: %d", src[1], script.status)
	}
	api := apiConst(t, script.raw, "API")
	if api != "/api/v1/inbox" {
		t.Fatalf("script reads %q", api)
	}
	if !strings.Contains(script.raw, `Authorization: "Bearer " + tok`) {
		t.Error("script does not send the token as a bearer token")
	}
	// Every field the script reads is one the API sends.
	for _, field := range []string{"items", "next_before", "unread", "principal", "title", "created_at", "read", "message", "url", "change", "due", "text", "more"} {
		if !strings.Contains(script.raw, "."+field) {
			t.Errorf("script does not read %q", field)
		}
	}

	t.Run("newest first, paged by before/limit", func(t *testing.T) {
		first := ts.do("GET", api+"?limit=2", bearer(tok), nil)
		if first.status != http.StatusOK || first.header.Get("Content-Type") != "application/json" {
			t.Fatalf("first page: %d %q %s", first.status, first.header.Get("Content-Type"), first.raw)
		}
		if first.body["principal"] != principal || first.body["unread"] != float64(1) {
			t.Errorf("first page: %s", first.raw)
		}
		next, _ := first.body["next_before"].(string)
		second := ts.do("GET", api+"?limit=2&before="+next, bearer(tok), nil)
		got := append(titles(first), titles(second)...)
		want := []string{"Newest", "Essay", "<img src=x onerror=alert(1)>", "Timetable"}
		if !slices.Equal(got, want) {
			t.Errorf("pages %q, want %q", got, want)
		}
		items := first.body["items"].([]any)
		newest, essay := items[0].(map[string]any), items[1].(map[string]any)
		if newest["read"] != false || essay["read"] != true || essay["created_at"] != "2026-11-02T09:02:00Z" {
			t.Errorf("items %v", items)
		}
		msg := essay["message"].(map[string]any)
		entry := msg["items"].([]any)[0].(map[string]any)
		if entry["url"] != "https://uni.example/essay" || entry["change"] != "deadline" || entry["due"] != "2026-11-04T09:00:00Z" {
			t.Errorf("essay entry %v", entry)
		}
	})

	t.Run("unread only", func(t *testing.T) {
		res := ts.do("GET", api+"?limit=20&unread=1", bearer(tok), nil)
		if got := titles(res); !slices.Equal(got, []string{"Newest"}) {
			t.Errorf("unread %q", got)
		}
	})

	t.Run("wrong token is a 401", func(t *testing.T) {
		wrong := "hin_" + strings.Repeat("0", 48)
		if res := ts.do("GET", api+"?limit=20", bearer(wrong), nil); res.status != http.StatusUnauthorized {
			t.Errorf("wrong token: %d", res.status)
		}
	})
	assertNoSecrets(t, ts.logs.String(), tok)
}
