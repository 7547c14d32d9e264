package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/webhook/signature"
)

// MaxHookBody is the largest inbound webhook body accepted (I7).
const MaxHookBody = 1 << 20

// Tolerance is how far a Standard Webhooks timestamp may be from now, both ways.
const Tolerance = 5 * time.Minute

// admitTimeout bounds the durable accept of one inbound event.
const admitTimeout = 5 * time.Second

// maxRendered caps a template's output.
const maxRendered = 4 << 10

// Admitter claims effects (delivery.Admitter).
type Admitter interface {
	Admit(ctx context.Context, a delivery.Admission) (store.CommitResult, error)
}

// Hook is one configured inbound webhook.
type Hook struct {
	Name     string
	Format   string   // standard | github
	Secrets  []string // any one verifies (rotation)
	Route    []string
	Template string
}

type compiledHook struct {
	Hook
	keys [][]byte
	tmpl *template.Template
}

// Hooks serves POST /hooks/{name}.
type Hooks struct {
	admit Admitter
	now   func() time.Time
	mu    sync.RWMutex
	hooks map[string]*compiledHook
}

// NewHooks returns the inbound hook handler.
func NewHooks(admit Admitter, now func() time.Time) *Hooks {
	if now == nil {
		now = time.Now
	}
	return &Hooks{admit: admit, now: now, hooks: map[string]*compiledHook{}}
}

// Set replaces the hooks (config reload). Every problem is returned at once.
func (h *Hooks) Set(hooks []Hook) error {
	next := map[string]*compiledHook{}
	var errs []error
	for _, hk := range hooks {
		c := &compiledHook{Hook: hk}
		for _, s := range hk.Secrets {
			if hk.Format == "github" {
				c.keys = append(c.keys, []byte(s))
				continue
			}
			k, err := signature.ParseSecret(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("inbound %s: %w", hk.Name, err))
				continue
			}
			c.keys = append(c.keys, k)
		}
		if len(c.keys) == 0 {
			errs = append(errs, fmt.Errorf("inbound %s: no usable secret", hk.Name))
			continue
		}
		if hk.Template != "" {
			t, err := CompileTemplate(hk.Template)
			if err != nil {
				errs = append(errs, fmt.Errorf("inbound %s: %w", hk.Name, err))
				continue
			}
			c.tmpl = t
		}
		next[hk.Name] = c
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	h.mu.Lock()
	h.hooks = next
	h.mu.Unlock()
	return nil
}

// templateFuncs is the small safe function set templates may use.
var templateFuncs = template.FuncMap{
	"upper": strings.ToUpper, "lower": strings.ToLower, "trim": strings.TrimSpace,
	"default": func(def, v any) any {
		if v == nil || v == "" {
			return def
		}
		return v
	},
	"truncate": func(n int, s string) string {
		r := []rune(s)
		if len(r) <= n {
			return s
		}
		return string(r[:n]) + "…"
	},
	"json": func(v any) string { b, _ := json.Marshal(v); return string(b) },
}

// CompileTemplate parses an inbound template (check-config uses it too).
func CompileTemplate(s string) (*template.Template, error) {
	return template.New("hook").Option("missingkey=zero").Funcs(templateFuncs).Parse(s)
}

// ServeHTTP implements POST /hooks/{name}: verify, then durably accept
// (claim per routed recipient) before answering 202 (I1).
func (h *Hooks) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return ErrMethod
	}
	name := r.PathValue("name")
	h.mu.RLock()
	hk := h.hooks[name]
	h.mu.RUnlock()
	if hk == nil {
		return ErrNotFound
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHookBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return ErrTooLarge
		}
		return &Error{Status: http.StatusBadRequest, Code: "bad_body", Msg: "could not read the request body"}
	}
	var id, event string
	switch hk.Format {
	case "github":
		id, event = r.Header.Get("X-GitHub-Delivery"), r.Header.Get("X-GitHub-Event")
		if id == "" {
			return ErrBadSignature
		}
		if err := signature.VerifyGitHub(hk.keys, r.Header.Get("X-Hub-Signature-256"), body); err != nil {
			return ErrBadSignature
		}
	default:
		id = r.Header.Get("webhook-id")
		if err := signature.Verify(hk.keys, id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body, h.now(), Tolerance); err != nil {
			return ErrBadSignature
		}
	}
	if len(id) > 200 {
		return &Error{Status: http.StatusBadRequest, Code: "bad_id", Msg: "delivery id too long"}
	}
	var payload any
	if err := json.Unmarshal(body, &payload); err != nil {
		return ErrBadJSON
	}
	msg := h.message(hk, event, payload)
	// A hung store must turn into a prompt 503, not a request that waits
	// out the client's own timeouts.
	actx, cancel := context.WithTimeout(r.Context(), admitTimeout)
	defer cancel()
	res, err := h.admit.Admit(actx, delivery.Admission{
		Source: "hook:" + name, Identity: id, Recipients: hk.Route, Message: msg,
	})
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			return ErrUnavailable
		}
		return err
	}
	return writeJSON(w, http.StatusAccepted, accepted{OK: true, ID: id, Duplicate: len(res.Claimed) == 0})
}

// accepted is the 202 answer to a hook (a struct: it encodes faster than a
// map on the hot path).
type accepted struct {
	OK        bool   `json:"ok"`
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate"`
}

// message renders the template, or a readable default summary.
func (h *Hooks) message(hk *compiledHook, event string, payload any) delivery.Message {
	m := delivery.Message{Kind: delivery.KindInbound, Title: hk.Name, TaskID: "hook:" + hk.Name, TaskName: hk.Name, OccurredAt: h.now()}
	obj, _ := payload.(map[string]any)
	if hk.tmpl != nil {
		var buf bytes.Buffer
		lw := &limitWriter{w: &buf, n: maxRendered}
		if err := hk.tmpl.Execute(lw, payload); err == nil || errors.Is(err, errLimit) {
			// A missing key renders empty, not as text/template's "<no value>".
			m.Text = strings.ReplaceAll(buf.String(), "<no value>", "")
			return m
		}
	}
	if hk.Format == "github" {
		m.Title, m.Text = githubSummary(event, obj)
	} else {
		m.Text = genericSummary(obj)
		if t := str(obj, "title"); t != "" {
			m.Title = t
		}
	}
	// The summary quotes the payload, which may be up to MaxHookBody: bound
	// it like a template's output.
	m.Title, m.Text = clip(m.Title, maxTitle), clip(m.Text, maxRendered)
	return m
}

// maxTitle caps a default summary's title.
const maxTitle = 256

// clip cuts s to at most n bytes at a UTF-8 character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func githubSummary(event string, obj map[string]any) (string, string) {
	repo := str(sub(obj, "repository"), "full_name")
	action := str(obj, "action")
	title, link := "", ""
	for _, k := range []string{"pull_request", "issue", "release", "discussion"} {
		if o := sub(obj, k); o != nil {
			title = firstNonEmpty(str(o, "title"), str(o, "name"), str(o, "tag_name"))
			link = str(o, "html_url")
			break
		}
	}
	if title == "" {
		if hc := sub(obj, "head_commit"); hc != nil {
			title, link = str(hc, "message"), str(hc, "url")
		}
	}
	// The event header is not JSON-decoded: keep it valid UTF-8.
	head := strings.TrimSpace(strings.Join([]string{"GitHub", strings.ToValidUTF8(event, ""), action}, " "))
	if repo != "" {
		head += " · " + repo
	}
	text := head
	if title != "" {
		text += "\n" + title
	}
	if link != "" {
		text += "\n" + link
	}
	return head, text
}

func genericSummary(obj map[string]any) string {
	if obj == nil {
		return "event received"
	}
	title := firstNonEmpty(str(obj, "title"), str(obj, "summary"), str(obj, "message"), str(obj, "text"), str(obj, "name"))
	link := firstNonEmpty(str(obj, "url"), str(obj, "link"), str(obj, "html_url"))
	switch {
	case title != "" && link != "":
		return title + ": " + link
	case title != "" || link != "":
		return title + link
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i == 8 {
			b.WriteString("…")
			break
		}
		if s, ok := obj[k].(string); ok && len(s) < 200 {
			fmt.Fprintf(&b, "%s: %s\n", k, s)
		}
	}
	if b.Len() == 0 {
		return "event received"
	}
	return strings.TrimSpace(b.String())
}

func sub(obj map[string]any, k string) map[string]any {
	if obj == nil {
		return nil
	}
	o, _ := obj[k].(map[string]any)
	return o
}

func str(obj map[string]any, k string) string {
	if obj == nil {
		return ""
	}
	s, _ := obj[k].(string)
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

var errLimit = errors.New("template output too long")

type limitWriter struct {
	w io.Writer
	n int
}

// Write passes p on while it fits; the write that would overflow is cut
// at the last whole UTF-8 character that fits and ends the output.
func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		cut := l.n
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		_, _ = l.w.Write(p[:cut])
		l.n = 0
		return 0, errLimit
	}
	l.n -= len(p)
	return l.w.Write(p)
}
