package download

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/watch"
)

// metaLimit bounds a file's metadata document.
const metaLimit = 1 << 20

// getter makes one download's requests: the token only to the site's own
// origin, redirects followed by hand and only within scope (the site's
// host and the plan's file-storage hosts).
type getter struct {
	c    *http.Client
	plan Plan
}

// source is the URL the file's bytes are read from. For canvas the
// file's metadata is read again first: the listed URL carries a verifier
// that expires (a stale one answers with a sign-in page), and the size
// and type are taken from the fresh answer.
func (g *getter) source(ctx context.Context, f *watch.File) (*url.URL, error) {
	if f.Meta == "" {
		u, err := url.Parse(f.URL)
		if err != nil || f.URL == "" {
			return nil, final("bad_url")
		}
		// The token goes in the query (pluginfile reads it only there),
		// and only to the site's own origin.
		if g.plan.Kind == "moodle" && g.plan.Token != "" && sameOrigin(u, g.plan.Site) {
			q := u.Query()
			q.Set("token", g.plan.Token)
			u.RawQuery = q.Encode()
		}
		return u, nil
	}
	meta, err := url.Parse(f.Meta)
	if err != nil {
		return nil, final("bad_url")
	}
	resp, err := g.get(ctx, meta)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, metaLimit))
	if err != nil {
		return nil, retryable("metadata")
	}
	doc := gjson.ParseBytes(unwrapBody(b))
	raw := doc.Get("url").String()
	if raw == "" {
		return nil, final("locked") // the file is locked or hidden for this person
	}
	u, err := meta.Parse(raw)
	if err != nil {
		return nil, final("bad_url")
	}
	if doc.Get("size").Exists() {
		f.Size = doc.Get("size").Int()
	}
	if ct := doc.Get("content-type").String(); ct != "" {
		f.ContentType = ct
	}
	return u, nil
}

// get GETs u, following up to maxHops redirects by hand. Each hop must
// stay in scope; the Authorization header goes only to the site's origin
// (scheme, host and port), never to file storage.
func (g *getter) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	for range maxHops + 1 {
		if !g.inScope(u) {
			return nil, final("redirect_out_of_scope")
		}
		if err := egress.CheckURL(u.String(), g.plan.AllowPrivate); err != nil {
			return nil, final("blocked")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, final("bad_url")
		}
		req.Header.Set("User-Agent", egress.DefaultUserAgent())
		if g.plan.Kind != "moodle" && g.plan.Token != "" && sameOrigin(u, g.plan.Site) {
			req.Header.Set("Authorization", "Bearer "+g.plan.Token)
		}
		resp, err := g.c.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, retryable("interrupted")
			}
			return nil, retryable("network")
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			resp.Body.Close()
			next, err := u.Parse(loc)
			if err != nil {
				return nil, final("bad_redirect")
			}
			u = next
			continue
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		defer resp.Body.Close()
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, statusFailure(resp, head)
	}
	return nil, final("too_many_redirects")
}

// statusFailure classifies an answer outside 2xx.
func statusFailure(resp *http.Response, body []byte) error {
	code := resp.StatusCode
	switch {
	case code == http.StatusTooManyRequests,
		code == http.StatusForbidden && bytes.Contains(bytes.ToLower(body), []byte("rate limit exceeded")):
		f := &failure{retry: true, reason: "rate_limited"}
		if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
			f.after = time.Duration(min(s, 3600)) * time.Second
		}
		return f
	case code == http.StatusUnauthorized:
		// The token was refused: the task's own run tells the owner; the
		// download waits for a working token, a while, then fails.
		return &failure{retry: true, after: 15 * time.Minute, reason: "auth"}
	case code >= 500 || code == http.StatusRequestTimeout:
		return retryable("http_" + strconv.Itoa(code))
	}
	return final("http_" + strconv.Itoa(code))
}

// inScope: the site's own host, or a file-storage host the plan lists.
func (g *getter) inScope(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return false
	}
	if strings.EqualFold(host, g.plan.Site.Hostname()) {
		return true
	}
	for _, p := range g.plan.Hosts {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == host || strings.HasPrefix(p, "*.") && strings.HasSuffix(host, p[1:]) {
			return true
		}
	}
	return false
}

// sameOrigin compares scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// unwrapBody strips Canvas's JSON hijacking guard.
func unwrapBody(b []byte) []byte {
	return bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(b), []byte("while(1);")))
}
