// Package agentapi is the narrow loopback API behind `herald mcp`
// (docs/agents.md, Agents): an agent token, issued by the admin for principal
// agent:<name>, lets its holder list its own tasks and inbox and request
// watches through the same submit → policy → approval flow as a chat
// /watch — and nothing else. It is separate from the admin API: an agent
// token opens no other route, and the admin token does not open this one.
package agentapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/webhook"
)

// MaxBody bounds a request body: the largest call is a watch request.
const MaxBody = 64 << 10

// Default rate limits per agent: calls in general, and watch requests,
// which create work for an admin.
var (
	DefaultCalls    = Limit{Every: 200 * time.Millisecond, Burst: 20}
	DefaultRequests = Limit{Every: time.Minute, Burst: 5}
)

// Limit is a token bucket: one call per Every, Burst at once.
type Limit struct {
	Every time.Duration
	Burst int
}

// Tasks is what the API needs of the task manager.
type Tasks interface {
	List(ctx context.Context, who string) ([]*tasks.Task, error)
	Get(ctx context.Context, id string) (*tasks.Task, error)
	Runs(ctx context.Context, id string, limit int) ([]tasks.RunRecord, error)
	Submit(ctx context.Context, s tasks.Submission) (*tasks.Task, error)
}

// Options configure the API.
type Options struct {
	Tokens *Tokens
	Tasks  Tasks
	Inbox  store.Inbox
	// Render gives an inbox item's title and text as a chat would show them.
	Render func(store.InboxItem) (title, text string)
	// Peer decides whether a remote address may use the API (default: loopback only).
	Peer     func(remoteAddr string) bool
	Calls    Limit // default DefaultCalls
	Requests Limit // default DefaultRequests
}

// API serves POST /agent/v1/{op}.
type API struct {
	o   Options
	ops map[string]op

	mu      sync.Mutex
	buckets map[string]*buckets
}

type op struct {
	request bool // counts against the watch request limit
	do      func(ctx context.Context, principal string, in json.RawMessage) (any, error)
}

type buckets struct{ calls, requests *rate.Limiter }

// maxBuckets bounds the rate limiter table; it only holds agents that
// presented a valid token, so reaching it means many agents, and starting
// over costs them only their bursts.
const maxBuckets = 10000

// New returns the API.
func New(o Options) *API {
	if o.Peer == nil {
		o.Peer = webhook.IsLoopbackPeer
	}
	if o.Calls.Every <= 0 {
		o.Calls = DefaultCalls
	}
	if o.Requests.Every <= 0 {
		o.Requests = DefaultRequests
	}
	if o.Render == nil {
		o.Render = func(it store.InboxItem) (string, string) { return it.Title, "" }
	}
	a := &API{o: o, buckets: map[string]*buckets{}}
	a.ops = map[string]op{
		"list_tasks":    {do: withInput(a.listTasks)},
		"get_task":      {do: withInput(a.getTask)},
		"request_watch": {request: true, do: withInput(a.requestWatch)},
		"list_inbox":    {do: withInput(a.listInbox)},
	}
	return a
}

// Ops names the operations the API offers, for tests that prove nothing
// else is reachable.
func (a *API) Ops() []string {
	out := make([]string, 0, len(a.ops))
	for n := range a.ops {
		out = append(out, n)
	}
	return out
}

// ServeHTTP implements the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	if !a.o.Peer(r.RemoteAddr) {
		return &webhook.Error{Status: http.StatusForbidden, Code: "not_loopback", Msg: "the agent API answers loopback clients only"}
	}
	if r.Header.Get("Origin") != "" {
		return &webhook.Error{Status: http.StatusForbidden, Code: "origin", Msg: "browser requests are refused"}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return webhook.ErrMethod
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return webhook.ErrUnauthorized
	}
	name, err := a.o.Tokens.Lookup(r.Context(), tok)
	if errors.Is(err, store.ErrNotFound) {
		return webhook.ErrUnauthorized
	}
	if err != nil {
		return webhook.ErrUnavailable
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &webhook.Error{Status: http.StatusUnsupportedMediaType, Code: "content_type", Msg: "send application/json"}
	}
	o, found := a.ops[r.PathValue("op")]
	if !found {
		return webhook.ErrNotFound
	}
	if wait, ok := a.allow(name, o.request); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		return &webhook.Error{Status: http.StatusTooManyRequests, Code: "rate_limited", Msg: "too many calls from this agent; wait a moment and try again"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return webhook.ErrTooLarge
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		return webhook.ErrBadJSON
	}
	res, err := o.do(r.Context(), address.AgentPrefix+name, body)
	if err != nil {
		return apiError(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": res})
}

// allow takes a token from the agent's buckets; when refused it says how
// long to wait.
func (a *API) allow(name string, request bool) (time.Duration, bool) {
	a.mu.Lock()
	b := a.buckets[name]
	if b == nil {
		if len(a.buckets) >= maxBuckets {
			a.buckets = map[string]*buckets{}
		}
		b = &buckets{
			calls:    rate.NewLimiter(rate.Every(a.o.Calls.Every), a.o.Calls.Burst),
			requests: rate.NewLimiter(rate.Every(a.o.Requests.Every), a.o.Requests.Burst),
		}
		a.buckets[name] = b
	}
	a.mu.Unlock()
	now := time.Now()
	if r := b.calls.ReserveN(now, 1); !r.OK() || r.DelayFrom(now) > 0 {
		d := r.DelayFrom(now)
		r.CancelAt(now)
		return d, false
	}
	if request {
		if r := b.requests.ReserveN(now, 1); !r.OK() || r.DelayFrom(now) > 0 {
			d := r.DelayFrom(now)
			r.CancelAt(now)
			return d, false
		}
	}
	return 0, true
}

// withInput decodes the body strictly into In before calling do.
func withInput[In any](do func(context.Context, string, In) (any, error)) func(context.Context, string, json.RawMessage) (any, error) {
	return func(ctx context.Context, principal string, raw json.RawMessage) (any, error) {
		var in In
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, &webhook.Error{Status: http.StatusBadRequest, Code: "bad_request", Msg: "the call does not have the expected fields: " + plainJSONError(err)}
		}
		return do(ctx, principal, in)
	}
}

func plainJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field + " has the wrong type"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}

// apiError maps manager errors to HTTP errors with their plain messages.
func apiError(err error) error {
	var he *webhook.Error
	if errors.As(err, &he) {
		return he
	}
	msg := err.Error()
	var ue *tasks.UserError
	if errors.As(err, &ue) {
		msg = ue.Msg
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return &webhook.Error{Status: http.StatusNotFound, Code: "not_found", Msg: msg}
	case errors.Is(err, tasks.ErrForbidden), errors.Is(err, tasks.ErrScope):
		return &webhook.Error{Status: http.StatusForbidden, Code: "forbidden", Msg: msg}
	case errors.Is(err, tasks.ErrInvalid):
		return &webhook.Error{Status: http.StatusBadRequest, Code: "bad_request", Msg: msg}
	case errors.Is(err, tasks.ErrLimit), errors.Is(err, tasks.ErrState):
		return &webhook.Error{Status: http.StatusConflict, Code: "conflict", Msg: msg}
	case errors.Is(err, tasks.ErrBusy), errors.Is(err, tasks.ErrNotOwner), errors.Is(err, store.ErrUnavailable):
		return &webhook.Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Msg: msg}
	}
	return err
}
