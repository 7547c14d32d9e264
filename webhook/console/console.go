// Package console is herald's admin console in the browser: one page
// embedded in the binary (GET /console) over a few narrow JSON routes
// under /console/api/. It shows what needs a human — pending approvals,
// failing watches, pushes whose outcome is unknown, unreachable
// recipients — and acts on it through the same manager calls as chat and
// the CLI, recorded as the signed-in console:<name> admin.
//
// Sign-in: `herald console login` asks the running service (admin API)
// for a one-time, short-lived code and prints a link carrying it. The
// page spends the code for a session cookie (HttpOnly, SameSite=Strict,
// Secure when the service is reached over https). Every state-changing
// request must come from the console's own origin and carry the
// session's CSRF token. The admin API itself keeps refusing browsers.
package console

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/webhook"
)

// Manager is what the console needs of the task manager: the reads and
// the decisions chat and the CLI use too.
type Manager interface {
	Policy() tasks.Policy
	List(ctx context.Context, who string) ([]*tasks.Task, error)
	Get(ctx context.Context, id string) (*tasks.Task, error)
	Runs(ctx context.Context, id string, limit int) ([]tasks.RunRecord, error)
	// Next says when a task is checked next and why then (SPEC §18).
	Next(t *tasks.Task) tasks.NextCheck
	Effects(ctx context.Context, source string, limit int) ([]store.Effect, error)
	Approve(ctx context.Context, who, id string) (*tasks.Task, error)
	Reject(ctx context.Context, who, id, reason string) (*tasks.Task, error)
	Redeliver(ctx context.Context, who, key string) (store.Effect, error)
	Pause(ctx context.Context, who, id string) (*tasks.Task, error)
	Resume(ctx context.Context, who, id string) (*tasks.Task, error)
	Delete(ctx context.Context, who, id string) (*tasks.Task, error)
	RunNow(ctx context.Context, who, id string) (tasks.RunRecord, error)
}

// Options configure the console.
type Options struct {
	Manager  Manager
	Sessions *Sessions
	// PublicURL is the service's public base URL ("" when none); its
	// origin is accepted on state-changing requests and, when https,
	// makes the cookie Secure.
	PublicURL func() string
	// TLS reports whether the listener terminates TLS itself.
	TLS bool
	// Sources lists ledger sources beside the tasks (inbound hooks as
	// "hook:<name>", test pushes as "test").
	Sources func() []string
	// KindOf names a recipient's transport kind (telegram, feishu,
	// inbox, webhook, feishu_bot, …) for the delivery view; never the address.
	KindOf func(recipient string) string
	// Recipients lists recipients and acts on them (nil: none listed).
	Recipients Recipients
	Now        func() time.Time
	// SignedIn is told of each sign-in, for the audit log; nil: nobody.
	SignedIn func(principal string)
}

// Console serves the page and its API.
type Console struct {
	o     Options
	cache *scanCache
}

// New returns a console.
func New(o Options) *Console {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PublicURL == nil {
		o.PublicURL = func() string { return "" }
	}
	if o.Sources == nil {
		o.Sources = func() []string { return nil }
	}
	if o.KindOf == nil {
		o.KindOf = kindOfAddress
	}
	return &Console{o: o, cache: &scanCache{}}
}

// CookieName is the session cookie.
const CookieName = "herald_console"

// csrfHeader carries the session's CSRF token on state-changing requests.
const csrfHeader = "X-Herald-CSRF"

// maxBody bounds the console API's request bodies.
const maxBody = 16 << 10

//go:embed page/index.html page/app.js page/style.css
var pageFiles embed.FS

// page is the console's browser page. Charts are SVG built as DOM nodes,
// so no inline style or script is ever needed.
var page = webhook.Page{Name: "console", Path: "/console", Files: pageFiles, Dir: "page", Images: true}

// Mount adds the console's routes to s.
func (c *Console) Mount(s *webhook.Server) {
	page.Mount(s)
	s.Handle("/console/api/login", c.login)
	s.Handle("/console/api/logout", c.authed(http.MethodPost, c.logout))
	s.Handle("/console/api/session", c.authed(http.MethodGet, c.session))
	s.Handle("/console/api/attention", c.authed(http.MethodGet, c.attention))
	s.Handle("/console/api/tasks", c.authed(http.MethodGet, c.tasks))
	s.Handle("/console/api/task", c.authed(http.MethodGet, c.task))
	s.Handle("/console/api/delivery", c.authed(http.MethodGet, c.delivery))
	s.Handle("/console/api/approve", c.authed(http.MethodPost, c.action(c.approve)))
	s.Handle("/console/api/reject", c.authed(http.MethodPost, c.action(c.reject)))
	s.Handle("/console/api/redeliver", c.authed(http.MethodPost, c.action(c.redeliver)))
	s.Handle("/console/api/recipients", c.authed(http.MethodGet, c.recipientsView))
	s.Handle("/console/api/recipients/enable", c.authed(http.MethodPost, c.recipientAction(c.enableRecipient)))
	s.Handle("/console/api/recipients/redeliver", c.authed(http.MethodPost, c.recipientAction(c.redeliverRecipient)))
	s.Handle("/console/api/pause", c.authed(http.MethodPost, c.action(c.change(Manager.Pause))))
	s.Handle("/console/api/resume", c.authed(http.MethodPost, c.action(c.change(Manager.Resume))))
	s.Handle("/console/api/delete", c.authed(http.MethodPost, c.action(c.change(Manager.Delete))))
	s.Handle("/console/api/run", c.authed(http.MethodPost, c.action(c.run)))
}

// secure sets the headers every console response carries; no-store keeps
// admin data out of shared caches and the browser's history cache.
func secure(h http.Header) { webhook.SecureHeaders(h, page.CSP()) }

// Refusals with stable codes the page (and tests) rely on.
var (
	errOrigin  = &webhook.Error{Status: http.StatusForbidden, Code: "origin", Msg: "request from another origin refused"}
	errCSRF    = &webhook.Error{Status: http.StatusForbidden, Code: "csrf", Msg: "missing or wrong CSRF token"}
	errSignIn  = &webhook.Error{Status: http.StatusUnauthorized, Code: "signed_out", Msg: "sign in again: run herald console login"}
	errCode    = &webhook.Error{Status: http.StatusUnauthorized, Code: "bad_code", Msg: "that sign-in code is wrong, used or expired; run herald console login for a new one"}
	errNoAdmin = &webhook.Error{Status: http.StatusForbidden, Code: "not_admin", Msg: "this console user is no longer an admin"}
)

// sameOrigin checks a state-changing request came from the console's own
// page: Origin must be present and name this service (as the browser
// reached it, or the public URL), and a Sec-Fetch-Site, when sent, must
// say same-origin.
func (c *Console) sameOrigin(r *http.Request) bool {
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if strings.EqualFold(origin, scheme+"://"+r.Host) {
		return true
	}
	if pub := c.o.PublicURL(); pub != "" {
		if u, err := url.Parse(pub); err == nil && u.Host != "" && strings.EqualFold(origin, u.Scheme+"://"+u.Host) {
			return true
		}
	}
	return false
}

// secureCookie reports whether the cookie must be Secure: the service
// terminates TLS, is reached over https, or is published at an https URL.
func (c *Console) secureCookie(r *http.Request) bool {
	return c.o.TLS || r.TLS != nil || strings.HasPrefix(strings.ToLower(c.o.PublicURL()), "https://")
}

type handler func(w http.ResponseWriter, r *http.Request, sess Session) error

// authed wraps an API route: the method, the session cookie, the admin
// check against the policy in force, and for POST the origin and CSRF.
func (c *Console) authed(method string, h handler) webhook.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		secure(w.Header())
		if r.Method != method {
			w.Header().Set("Allow", method)
			return webhook.ErrMethod
		}
		if method == http.MethodPost && !c.sameOrigin(r) {
			return errOrigin
		}
		ck, err := r.Cookie(CookieName)
		if err != nil {
			return errSignIn
		}
		sess, err := c.o.Sessions.Lookup(r.Context(), ck.Value)
		if errors.Is(err, ErrNoSession) {
			return errSignIn
		}
		if err != nil {
			return webhook.ErrUnavailable
		}
		if method == http.MethodPost {
			got := r.Header.Get(csrfHeader)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.CSRF)) != 1 {
				return errCSRF
			}
		}
		if !c.o.Manager.Policy().IsAdmin(sess.Principal) {
			return errNoAdmin
		}
		return h(w, r, sess)
	}
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return &webhook.Error{Status: http.StatusUnsupportedMediaType, Code: "content_type", Msg: "send application/json"}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return webhook.ErrTooLarge
	}
	if err := json.Unmarshal(b, v); err != nil {
		return webhook.ErrBadJSON
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(v)
}

// login spends a sign-in code for a session cookie. It needs no session
// and no CSRF token, but its origin is checked like every POST.
func (c *Console) login(w http.ResponseWriter, r *http.Request) error {
	secure(w.Header())
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return webhook.ErrMethod
	}
	if !c.sameOrigin(r) {
		return errOrigin
	}
	var in struct {
		Code string `json:"code"`
	}
	if err := readJSON(w, r, &in); err != nil {
		return err
	}
	tok, sess, err := c.o.Sessions.Exchange(r.Context(), in.Code)
	if errors.Is(err, ErrBadCode) {
		return errCode
	}
	if err != nil {
		return webhook.ErrUnavailable
	}
	if !c.o.Manager.Policy().IsAdmin(sess.Principal) {
		_ = c.o.Sessions.End(r.Context(), tok)
		return errNoAdmin
	}
	if c.o.SignedIn != nil {
		c.o.SignedIn(sess.Principal)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: tok, Path: "/console", MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, Secure: c.secureCookie(r), SameSite: http.SameSiteStrictMode,
	})
	return writeJSON(w, sessionView(sess))
}

func sessionView(s Session) map[string]any {
	return map[string]any{"ok": true, "principal": s.Principal, "csrf": s.CSRF, "expires": s.Expires.UTC()}
}

func (c *Console) session(w http.ResponseWriter, r *http.Request, sess Session) error {
	return writeJSON(w, sessionView(sess))
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, sess Session) error {
	if ck, err := r.Cookie(CookieName); err == nil {
		if err := c.o.Sessions.End(r.Context(), ck.Value); err != nil {
			return webhook.ErrUnavailable
		}
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/console", MaxAge: -1,
		HttpOnly: true, Secure: c.secureCookie(r), SameSite: http.SameSiteStrictMode})
	return writeJSON(w, map[string]any{"ok": true})
}

// act runs a decision and answers it with the manager's own plain words
// in both languages when it is refused.
func act(w http.ResponseWriter, res any, err error) error {
	if err != nil {
		return actionError(err)
	}
	return writeJSON(w, map[string]any{"ok": true, "result": res})
}

func actionError(err error) error {
	var we *webhook.Error
	if errors.As(err, &we) {
		return we
	}
	var ue *tasks.UserError
	msg := "the action failed; try again"
	if errors.As(err, &ue) {
		msg = ue.Msg
		if zh, _ := text.Error("zh", ue); zh != "" && zh != ue.Msg {
			msg += " / " + zh
		}
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return &webhook.Error{Status: http.StatusNotFound, Code: "not_found", Msg: msg}
	case errors.Is(err, tasks.ErrForbidden), errors.Is(err, tasks.ErrScope):
		return &webhook.Error{Status: http.StatusForbidden, Code: "forbidden", Msg: msg}
	case errors.Is(err, tasks.ErrState), errors.Is(err, tasks.ErrInvalid), errors.Is(err, tasks.ErrLimit),
		errors.Is(err, store.ErrIllegalTransition):
		if ue == nil {
			msg = "not possible in its current state"
		}
		return &webhook.Error{Status: http.StatusConflict, Code: "conflict", Msg: msg}
	}
	return webhook.ErrUnavailable
}

type idIn struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Key    string `json:"key"`
}

// action makes a console action of do: it reads the body, runs do as
// the signed-in person, drops the cached views, whatever the outcome, and
// answers with what do returned.
func (c *Console) action(do func(ctx context.Context, principal string, in idIn) (map[string]string, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, sess Session) error {
		var in idIn
		if err := readJSON(w, r, &in); err != nil {
			return err
		}
		res, err := do(r.Context(), sess.Principal, in)
		c.cache.drop()
		return act(w, res, err)
	}
}

func (c *Console) approve(ctx context.Context, principal string, in idIn) (map[string]string, error) {
	return taskState(c.o.Manager.Approve(ctx, principal, in.ID))
}

func (c *Console) reject(ctx context.Context, principal string, in idIn) (map[string]string, error) {
	if len(in.Reason) > 500 {
		in.Reason = in.Reason[:500]
	}
	return taskState(c.o.Manager.Reject(ctx, principal, in.ID, strings.TrimSpace(in.Reason)))
}

// change is a task action the CLI and chat have too (pause, resume,
// delete), made as the signed-in admin.
func (c *Console) change(do func(m Manager, ctx context.Context, who, id string) (*tasks.Task, error)) func(context.Context, string, idIn) (map[string]string, error) {
	return func(ctx context.Context, principal string, in idIn) (map[string]string, error) {
		return taskState(do(c.o.Manager, ctx, principal, in.ID))
	}
}

// run checks a task now and answers with the run's outcome.
func (c *Console) run(ctx context.Context, principal string, in idIn) (map[string]string, error) {
	rec, err := c.o.Manager.RunNow(ctx, principal, in.ID)
	if err != nil {
		return nil, err
	}
	return map[string]string{"id": in.ID, "outcome": rec.Outcome, "class": string(rec.Class)}, nil
}

func taskState(t *tasks.Task, err error) (map[string]string, error) {
	if err != nil {
		return nil, err
	}
	return map[string]string{"id": t.ID, "state": string(t.State)}, nil
}

func (c *Console) redeliver(ctx context.Context, principal string, in idIn) (map[string]string, error) {
	fx, err := c.o.Manager.Redeliver(ctx, principal, in.Key)
	if err != nil {
		return nil, err
	}
	return map[string]string{"key": fx.Key, "state": string(fx.State)}, nil
}
