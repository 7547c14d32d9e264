package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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

// ServeHTTP implements POST /hooks/{name}: refuse what the headers
// already condemn, read the body (counted against the listener's budget
// for unauthenticated bodies), verify, then durably accept (claim per
// routed recipient) before answering 202 (I1).
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
	id, event, err := h.checkHeaders(hk, r)
	if err != nil {
		return err
	}
	body, release, err := readBody(w, r, MaxHookBody)
	if err != nil {
		return err
	}
	defer release() // nothing below keeps the body: decoding copies it
	identity, err := h.verify(hk, r, id, body)
	if err != nil {
		return err
	}
	authenticated(r)
	var payload any
	if err := json.Unmarshal(body, &payload); err != nil {
		return ErrBadJSON
	}
	msg := h.message(hk, event, payload)
	// A hung store must turn into a prompt 503, not a request that waits
	// out the client's own timeouts.
	actx, cancel := context.WithTimeout(r.Context(), admitTimeout)
	defer cancel()
	res, err := h.admit.Admit(actx, delivery.Admission{Source: store.HookSource + name, Identity: identity, Recipients: hk.Route, Message: msg})
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			return ErrUnavailable
		}
		return err
	}
	return writeJSON(w, http.StatusAccepted, accepted{OK: true, ID: id, Duplicate: len(res.Claimed) == 0})
}

// checkHeaders refuses, before a byte of the body is read, a delivery
// whose headers already condemn it: signature headers missing or
// malformed, a Standard Webhooks timestamp outside the tolerance, an id
// too long, a declared length over the limit. It returns the delivery id
// and, for GitHub, the event name.
func (h *Hooks) checkHeaders(hk *compiledHook, r *http.Request) (id, event string, err error) {
	switch hk.Format {
	case "github":
		id, event = r.Header.Get("X-GitHub-Delivery"), r.Header.Get("X-GitHub-Event")
		if id == "" || signature.CheckGitHubHeader(r.Header.Get(signature.HeaderGitHub)) != nil {
			return "", "", ErrBadSignature
		}
	default:
		id = r.Header.Get(signature.HeaderID)
		if signature.CheckHeaders(id, r.Header.Get(signature.HeaderTimestamp), r.Header.Get(signature.HeaderSignature), h.now(), Tolerance) != nil {
			return "", "", ErrBadSignature
		}
	}
	if len(id) > maxID {
		return "", "", ErrBadID
	}
	if r.ContentLength > MaxHookBody {
		return "", "", ErrTooLarge
	}
	return id, event, nil
}

// maxID bounds a delivery id.
const maxID = 200

// verify checks the body's signature and returns the identity the
// delivery is claimed under. A Standard Webhooks delivery is claimed under
// its id: the signature covers id and timestamp, so a replay is either
// stale or the same id. GitHub's signature covers the body alone, so a
// captured body and signature can be sent again under any
// X-GitHub-Delivery: such a delivery is claimed under the digest of its
// body, and the same body is one event however often it comes, for as
// long as the ledger keeps its claim: store.retention (30 days by
// default), and never less than store.ReplayWindow (24 h) after the claim.
func (h *Hooks) verify(hk *compiledHook, r *http.Request, id string, body []byte) (string, error) {
	switch hk.Format {
	case "github":
		if signature.VerifyGitHub(hk.keys, r.Header.Get(signature.HeaderGitHub), body) != nil {
			return "", ErrBadSignature
		}
		sum := sha256.Sum256(body)
		return store.DigestIdentity + hex.EncodeToString(sum[:]), nil
	default:
		if signature.Verify(hk.keys, id, r.Header.Get(signature.HeaderTimestamp), r.Header.Get(signature.HeaderSignature), body, h.now(), Tolerance) != nil {
			return "", ErrBadSignature
		}
		return id, nil
	}
}

// readBody reads r's body, at most limit bytes, into a buffer sized from
// the declared length (so memory follows what the body is counted as).
// Large buffers come from a pool and go back with release, so bodies cut
// off by the deadline are reused rather than left for the collector.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, release func(), err error) {
	size := int64(32 << 10)
	if n := r.ContentLength; n >= 0 && n <= limit {
		size = n + 1 // room to see the end without growing
	}
	rd := http.MaxBytesReader(w, r.Body, limit)
	buf := getBuffer(int(min(size, limit+1)))
	release = func() { putBuffer(buf) }
	for {
		if len(buf) == cap(buf) {
			next := getBuffer(int(min(2*int64(cap(buf))-1, limit+1)))
			next = append(next, buf...)
			putBuffer(buf)
			buf = next
			release = func() { putBuffer(buf) }
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return buf, release, nil
		default:
			release()
			return nil, func() {}, bodyError(err)
		}
	}
}

// bodyPools hold body buffers of 64 KiB, 128 KiB, ... 1 MiB (+1 byte to
// see the end of a body of exactly the limit).
var bodyPools [5]sync.Pool

// poolClass is the pool for a buffer of n bytes, or -1 (small: not pooled).
func poolClass(n int) int {
	for i := range bodyPools {
		if n <= (64<<10)<<i+1 {
			return i
		}
	}
	return -1
}

// bufferSize is what a buffer for n bytes takes.
func bufferSize(n int) int {
	if c := poolClass(n); n >= 64<<10 && c >= 0 {
		return (64<<10)<<c + 1
	}
	return n
}

func getBuffer(n int) []byte {
	c := poolClass(n)
	if n < 64<<10 || c < 0 {
		return make([]byte, 0, n)
	}
	if b, ok := bodyPools[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, (64<<10)<<c+1)
}

func putBuffer(b []byte) {
	c := poolClass(cap(b))
	if c < 0 || cap(b) != (64<<10)<<c+1 {
		return
	}
	b = b[:0]
	bodyPools[c].Put(&b)
}

// bodyError classifies a failed body read.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return ErrTooLarge
	case errors.Is(err, errBodyBudget):
		return ErrBodyBudget
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ErrBodyTimeout
	}
	return ErrBadBody
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
