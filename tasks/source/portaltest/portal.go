// Package portaltest is a campus portal on loopback for tests of sources
// behind a login or JavaScript: a CAS-style sign-in (a form with hidden
// lt and execution fields, a ticket redirect chain, expirable sessions),
// a notice list behind it, one behind a fixed cookie, and a page whose
// list a script builds from a JSON endpoint.
package portaltest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// Account and Password sign in; Cookie is the fixed cookie of
// /portal/cookie/notices.
const (
	Account  = "2026010203"
	Password = "s3cret-Passw0rd"
	Cookie   = "portal_token=tok-8f2e61c0d9"
)

// Portal is the site. Its fields are read under its lock by the methods.
type Portal struct {
	*httptest.Server
	mu       sync.Mutex
	notices  []string
	sessions map[string]bool   // portal session id → live
	flows    map[string]string // CAS flow cookie → the lt it was given
	tickets  map[string]bool
	posts    int // sign-in forms received
	logins   int // sign-ins accepted
	// Extra are addresses the JavaScript page's script also fetches,
	// Frames those it shows in frames.
	Extra, Frames []string
}

// New starts a portal listing notices.
func New(notices ...string) *Portal {
	p := &Portal{notices: notices, sessions: map[string]bool{}, flows: map[string]string{}, tickets: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cas/login", p.casForm)
	mux.HandleFunc("POST /cas/login", p.casPost)
	mux.HandleFunc("GET /portal/callback", p.callback)
	mux.HandleFunc("GET /portal/notices", p.notices_)
	mux.HandleFunc("GET /portal/strict/notices", p.strictNotices)
	mux.HandleFunc("GET /portal/cookie/notices", p.cookieNotices)
	mux.HandleFunc("GET /portal/js/notices", p.jsPage)
	mux.HandleFunc("GET /portal/api/notices.json", p.jsonList)
	p.Server = httptest.NewServer(mux)
	return p
}

// LoginURL is the sign-in page's address, naming the service to return to.
func (p *Portal) LoginURL() string {
	return p.URL + "/cas/login?service=" + url.QueryEscape(p.URL+"/portal/callback")
}

// Add lists one more notice.
func (p *Portal) Add(title string) {
	p.mu.Lock()
	p.notices = append(p.notices, title)
	p.mu.Unlock()
}

// Expire ends every portal session, as a session timeout does.
func (p *Portal) Expire() {
	p.mu.Lock()
	p.sessions = map[string]bool{}
	p.mu.Unlock()
}

// Posts is how many sign-in forms were sent, Logins how many succeeded.
func (p *Portal) Posts() (posts, logins int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.posts, p.logins
}

func token(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func (p *Portal) casForm(w http.ResponseWriter, r *http.Request) { p.form(w, r, "") }

// form serves the sign-in page with a fresh flow: lt and execution are
// hidden fields tied to the flow cookie, as CAS does.
func (p *Portal) form(w http.ResponseWriter, r *http.Request, msg string) {
	flow, lt := token("F-"), token("LT-")
	p.mu.Lock()
	p.flows[flow] = lt
	p.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "CASFLOW", Value: flow, Path: "/cas", HttpOnly: true})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	action := "/cas/login?service=" + url.QueryEscape(r.URL.Query().Get("service"))
	fmt.Fprintf(w, `<!doctype html><html><head><title>统一身份认证</title></head><body>
<div class="err">%s</div>
<form id="fm1" method="post" action="%s">
<input type="text" name="username"> <input type="password" name="password">
<input type="checkbox" name="rememberMe" value="true">
<input type="hidden" name="lt" value="%s"><input type="hidden" name="execution" value="e1s1-%s">
<input type="hidden" name="_eventId" value="submit"><button type="submit" name="login">登录</button>
</form></body></html>`, html.EscapeString(msg), html.EscapeString(action), lt, lt)
}

func (p *Portal) casPost(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	fc, _ := r.Cookie("CASFLOW")
	p.mu.Lock()
	p.posts++
	ok := fc != nil && p.flows[fc.Value] != "" && p.flows[fc.Value] == r.PostForm.Get("lt") &&
		r.PostForm.Get("execution") == "e1s1-"+p.flows[fc.Value] && r.PostForm.Get("_eventId") == "submit" &&
		r.PostForm.Get("username") == Account && r.PostForm.Get("password") == Password
	if fc != nil {
		delete(p.flows, fc.Value)
	}
	var ticket string
	if ok {
		p.logins++
		ticket = token("ST-")
		p.tickets[ticket] = true
	}
	p.mu.Unlock()
	if !ok {
		p.form(w, r, "用户名或密码错误 / Invalid credentials.")
		return
	}
	svc, err := url.Parse(r.URL.Query().Get("service"))
	if err != nil {
		http.Error(w, "bad service", http.StatusBadRequest)
		return
	}
	q := svc.Query()
	q.Set("ticket", ticket)
	svc.RawQuery = q.Encode()
	http.Redirect(w, r, svc.String(), http.StatusFound)
}

// callback validates the ticket, opens a portal session and sends the
// browser on to the notices.
func (p *Portal) callback(w http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("ticket")
	p.mu.Lock()
	ok := p.tickets[t]
	delete(p.tickets, t)
	sid := token("S-")
	if ok {
		p.sessions[sid] = true
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, "invalid ticket", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "PORTALSESSION", Value: sid, Path: "/portal", HttpOnly: true})
	http.Redirect(w, r, "/portal/notices", http.StatusFound)
}

func (p *Portal) signedIn(r *http.Request) bool {
	c, err := r.Cookie("PORTALSESSION")
	p.mu.Lock()
	defer p.mu.Unlock()
	return err == nil && p.sessions[c.Value]
}

func (p *Portal) notices_(w http.ResponseWriter, r *http.Request) {
	if !p.signedIn(r) {
		http.Redirect(w, r, p.LoginURL(), http.StatusFound)
		return
	}
	p.list(w)
}

// strictNotices answers 401 without a session, as an API-style page does.
func (p *Portal) strictNotices(w http.ResponseWriter, r *http.Request) {
	if !p.signedIn(r) {
		http.Error(w, "session expired", http.StatusUnauthorized)
		return
	}
	p.list(w)
}

func (p *Portal) cookieNotices(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Cookie"), Cookie) {
		// A portal that lost the session serves its sign-in page, 200.
		p.form(w, r, "")
		return
	}
	p.list(w)
}

func (p *Portal) list(w http.ResponseWriter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><html><body><div class="user">欢迎 `+Account+`</div><ul id="notices">`)
	for i, n := range p.notices {
		fmt.Fprintf(w, `<li class="notice"><a href="/portal/n/%d">%s</a></li>`, i, html.EscapeString(n))
	}
	fmt.Fprint(w, `</ul></body></html>`)
}

// jsPage is an empty list its script fills from the JSON endpoint.
func (p *Portal) jsPage(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	extra, _ := json.Marshal(append([]string{}, p.Extra...))
	var frames strings.Builder
	for _, f := range p.Frames {
		fmt.Fprintf(&frames, `<iframe src="%s"></iframe>`, html.EscapeString(f))
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><head><title>通知公告</title></head><body>
<ul id="list"></ul><p id="state">loading</p>%s
<script>
for (const u of %s) { fetch(u).catch(() => {}); const i = new Image(); i.src = u; }
fetch("/portal/api/notices.json").then(r => r.json()).then(rows => {
  const ul = document.getElementById("list");
  for (const n of rows) {
    const li = document.createElement("li"); li.className = "notice";
    const a = document.createElement("a"); a.href = "/portal/n/" + n.id; a.textContent = n.title;
    li.appendChild(a); ul.appendChild(li);
  }
  document.getElementById("state").textContent = "done";
});
</script></body></html>`, frames.String(), extra)
}

func (p *Portal) jsonList(w http.ResponseWriter, _ *http.Request) {
	type row struct {
		ID    int    `json:"id"`
		Title string `json:"title"`
	}
	p.mu.Lock()
	rows := make([]row, len(p.notices))
	for i, n := range p.notices {
		rows[i] = row{i, n}
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rows)
}
