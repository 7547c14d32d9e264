package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServe_RootLinksToTheConsoleAndTheInbox: a person who opens the
// service's address in a browser finds links to the console and the inbox
// page, each of which answers; a client asking for JSON gets the paths;
// other unknown paths stay not found.
func TestServe_RootLinksToTheConsoleAndTheInbox(t *testing.T) {
	addr := freeAddr(t)
	startServe(t, adjustExample(t, addr, nil))
	base := "http://" + addr

	get := func(path, accept string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, page := get("/", "text/html,application/xhtml+xml")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}
	for _, link := range []string{`href="/console"`, `href="/inbox"`} {
		if !strings.Contains(page, link) {
			t.Errorf("the page lacks %s:\n%s", link, page)
		}
	}
	if resp.Header.Get("Content-Security-Policy") == "" {
		t.Error("the page has no content security policy")
	}

	resp, body := get("/", "application/json")
	var links map[string]string
	if err := json.Unmarshal([]byte(body), &links); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / as JSON: %d %v\n%s", resp.StatusCode, err, body)
	}
	if links["console"] != "/console" || links["inbox"] != "/inbox" {
		t.Errorf("JSON links: %v", links)
	}
	for _, path := range []string{links["console"], links["inbox"]} {
		if resp, _ := get(path, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
	}
	if resp, _ := get("/nope", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", resp.StatusCode)
	}
}

// TestServe_StartUpLineSaysWhatToDoNext: a person who just ran `make run`
// reads, in the start-up log, how to talk to herald, open the console and
// connect a chat platform.
func TestServe_StartUpLineSaysWhatToDoNext(t *testing.T) {
	p, _ := startServe(t, adjustExample(t, freeAddr(t), nil))
	eventually(t, "the next-steps line", func() bool { return strings.Contains(p.log.String(), "next steps") })
	for _, want := range []string{"herald chat --as admin", "herald console login", "docs/setup.md", p.url("/")} {
		if !strings.Contains(p.log.String(), want) {
			t.Errorf("the start-up log lacks %q:\n%s", want, p.log.String())
		}
	}
}
