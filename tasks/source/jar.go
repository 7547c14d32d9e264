package source

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// jar holds the cookies of one signed-in session: set by every answer of
// a sign-in or a read, sent back by host and path, and written out whole
// so the session outlives the run and a restart (docs/sources.md,
// Sources behind a login or JavaScript). Its values are secrets (I10).
type jar struct {
	mu      sync.Mutex
	cookies []jarCookie
	changed bool
	now     func() time.Time
}

// jarCookie is one cookie: Domain is set for a cookie shared with the
// subdomains of a host, Host for one kept to its host.
type jarCookie struct {
	Name    string    `json:"n"`
	Value   string    `json:"v"`
	Host    string    `json:"h,omitempty"`
	Domain  string    `json:"d,omitempty"`
	Path    string    `json:"p,omitempty"`
	Secure  bool      `json:"s,omitempty"`
	Expires time.Time `json:"e,omitzero"`
}

// maxJar bounds a stored session: sites set a handful of cookies.
const maxJar = 64

func newJar(now func() time.Time) *jar { return &jar{now: now} }

// decodeJar reads a session written by encode; anything unreadable is an
// empty session, which signs in again.
func decodeJar(s string, now func() time.Time) *jar {
	j := newJar(now)
	if s != "" && json.Unmarshal([]byte(s), &j.cookies) != nil {
		j.cookies = nil
	}
	return j
}

func (j *jar) encode() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	b, _ := json.Marshal(j.cookies)
	return string(b)
}

// dirty reports whether a cookie was set since the last call.
func (j *jar) dirty() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	d := j.changed
	j.changed = false
	return d
}

func (j *jar) empty() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.cookies) == 0
}

// has reports whether a live cookie called name is held.
func (j *jar) has(name string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range j.cookies {
		if c.Name == name && !j.expired(c) {
			return true
		}
	}
	return false
}

func (j *jar) expired(c jarCookie) bool {
	return !c.Expires.IsZero() && !j.now().Before(c.Expires)
}

// set takes the Set-Cookie lines of an answer from u.
func (j *jar) set(u *url.URL, h http.Header) {
	if len(h.Values("Set-Cookie")) == 0 {
		return
	}
	host := strings.ToLower(u.Hostname())
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, hc := range (&http.Response{Header: h}).Cookies() {
		c := jarCookie{Name: hc.Name, Value: hc.Value, Path: hc.Path, Secure: hc.Secure}
		if c.Path == "" || !strings.HasPrefix(c.Path, "/") {
			c.Path = defaultPath(u)
		}
		if d := strings.TrimPrefix(strings.ToLower(hc.Domain), "."); d != "" && (d == host || strings.HasSuffix(host, "."+d)) && strings.Contains(d, ".") {
			c.Domain = d
		} else {
			c.Host = host
		}
		switch {
		case hc.MaxAge < 0:
			c.Expires = j.now().Add(-time.Second)
		case hc.MaxAge > 0:
			c.Expires = j.now().Add(time.Duration(hc.MaxAge) * time.Second)
		case !hc.Expires.IsZero():
			c.Expires = hc.Expires
		}
		j.put(c)
	}
}

func (j *jar) put(c jarCookie) {
	j.changed = true
	kept := j.cookies[:0]
	for _, o := range j.cookies {
		if (o.Name != c.Name || o.Host != c.Host || o.Domain != c.Domain || o.Path != c.Path) && !j.expired(o) {
			kept = append(kept, o)
		}
	}
	j.cookies = kept
	if !j.expired(c) && len(j.cookies) < maxJar {
		j.cookies = append(j.cookies, c)
	}
}

// header is the Cookie header for a request to u, "" when none applies.
func (j *jar) header(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var parts []string
	for _, c := range j.cookies {
		switch {
		case j.expired(c), c.Secure && u.Scheme != "https":
		case c.Host != "" && c.Host != host:
		case c.Domain != "" && host != c.Domain && !strings.HasSuffix(host, "."+c.Domain):
		case !pathMatch(c.Path, p):
		default:
			parts = append(parts, c.Name+"="+c.Value)
		}
	}
	return strings.Join(parts, "; ")
}

func defaultPath(u *url.URL) string {
	p := u.EscapedPath()
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func pathMatch(cookie, req string) bool {
	if cookie == req || cookie == "/" {
		return true
	}
	return strings.HasPrefix(req, cookie) && (strings.HasSuffix(cookie, "/") || req[len(cookie)] == '/')
}
