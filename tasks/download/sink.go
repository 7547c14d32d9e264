package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Planner gives a task's download plan at the moment of a download. It
// fails with ErrGone when the task no longer exists and ErrScope when the
// task no longer lies inside its approval (I8): nothing is written then.
type Planner interface {
	DownloadPlan(ctx context.Context, taskID string) (Plan, error)
}

var (
	// ErrGone: the task was deleted.
	ErrGone = errors.New("task is gone")
	// ErrScope: the download lies outside the task's approval.
	ErrScope = errors.New("download is outside the approved scope")
)

// Defaults of Options.
const (
	DefaultMaxBytes = 2 << 30 // one file
	DefaultTimeout  = 30 * time.Minute
	// maxAttempts bounds the attempts at one file whose failure is only
	// for now (a network error, a short body, throttling): past it the
	// download ends failed, visible in the list, and a changed file is a
	// new one.
	maxAttempts = 8
	maxHops     = 5
)

// Options configure a Sink.
type Options struct {
	Plans Planner
	// Dir is where relative download dirs live: <data-dir>/downloads.
	Dir      string
	MaxBytes int64         // per file (default DefaultMaxBytes)
	Timeout  time.Duration // per file, body included (default DefaultTimeout)
}

// Sink downloads one file per delivery into its task's directory. A
// download only reads from the site, so it crosses no outside boundary:
// it deduplicates by construction (the same key writes the same file) and
// an interrupted one is simply done again (I3).
type Sink struct {
	o Options

	mu       sync.Mutex
	clients  map[clientKey]*http.Client
	sessions map[string]*session // by site and token
	failures map[string]int      // retryable failures by effect key, this process
}

// session serialises one site and token's downloads: one request at a
// time. Only a few deliveries wait for it; each of the rest is given a
// turn after those already waiting or given one, from how long a download
// has been taking, and comes back then: a large course never holds the
// dispatcher's workers from other pushes, and comes back about once.
type session struct {
	mu      sync.Mutex
	waiting int           // deliveries holding or waiting for mu
	took    time.Duration // how long a download takes, smoothed
	next    time.Time     // the turn to give the next one that finds it busy
}

// maxWaiting bounds the deliveries that hold or wait for one session: a
// few of the dispatcher's workers at most.
const maxWaiting = 4

// Bounds of a turn given to a download that found its session busy, and
// the pace assumed before any download finished: a turn given too soon
// only costs one more look, one given too late idles the session.
const (
	minTurn   = 10 * time.Millisecond
	maxTurn   = 10 * time.Minute
	firstTurn = 50 * time.Millisecond
)

// NewSink returns a download sink.
func NewSink(o Options) *Sink {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Sink{o: o, clients: map[clientKey]*http.Client{}, sessions: map[string]*session{}, failures: map[string]int{}}
}

var (
	_ delivery.Sink          = (*Sink)(nil)
	_ delivery.Deduplicating = (*Sink)(nil)
)

// Dedups implements delivery.Deduplicating: a repeated download writes
// the same file again, never a second one.
func (s *Sink) Dedups(delivery.Address) bool { return true }

// Send implements delivery.Sink.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	f, err := FileOf(d.Message)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_payload"}
	}
	plan, out, ok := s.plan(ctx, d)
	if !ok {
		return out
	}
	release, wait := s.enter(plan)
	if release == nil {
		return delivery.Outcome{Result: delivery.RetryAfter, After: wait, Reason: "busy"}
	}
	defer release()
	// Its turn may have come after a wait: the approval is checked again
	// now (I8).
	if plan, out, ok = s.plan(ctx, d); !ok {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	rel, err := s.fetch(ctx, plan, &f, d)
	if err == nil {
		s.forget(d.Key)
		return delivery.Outcome{Result: delivery.Completed, ProviderID: rel}
	}
	var fl *failure
	if !errors.As(err, &fl) {
		fl = &failure{retry: true, reason: "write"}
	}
	n := s.failed(d.Key)
	if !fl.retry || n >= maxAttempts {
		s.forget(d.Key)
		return delivery.Outcome{Result: delivery.Failed, Reason: fl.reason}
	}
	after := fl.after
	if after <= 0 {
		after = min(time.Second<<max(n-1, 0), 5*time.Minute)
	}
	return delivery.Outcome{Result: delivery.RetryAfter, After: after, Reason: fl.reason}
}

// plan asks for the task's download plan; when there is none, ok is
// false and out is the download's outcome.
func (s *Sink) plan(ctx context.Context, d delivery.Delivery) (plan Plan, out delivery.Outcome, ok bool) {
	plan, err := s.o.Plans.DownloadPlan(ctx, d.Message.TaskID)
	switch {
	case err == nil:
		return plan, out, true
	case errors.Is(err, ErrGone):
		out = delivery.Outcome{Result: delivery.Failed, Reason: "task_gone"}
	case errors.Is(err, ErrScope):
		out = delivery.Outcome{Result: delivery.Failed, Reason: "out_of_scope"}
	case s.failed(d.Key) >= maxAttempts: // the store or the credential did not answer, again
		out = delivery.Outcome{Result: delivery.Failed, Reason: "no_plan"}
	default:
		return plan, delivery.Outcome{Result: delivery.RetryAfter, After: time.Minute, Reason: "no_plan"}, false
	}
	s.forget(d.Key)
	return plan, out, false
}

// enter takes plan's session (site and token), waiting behind at most
// maxWaiting-1 others. When it is busier than that, release is nil and
// wait is the turn given: after everything ahead, at the pace downloads
// have been going.
func (s *Sink) enter(plan Plan) (release func(), wait time.Duration) {
	h := sha256.Sum256([]byte(plan.Token))
	key := strings.ToLower(plan.Site.Host) + "|" + hex.EncodeToString(h[:8])
	s.mu.Lock()
	ss, found := s.sessions[key]
	if !found {
		ss = &session{took: firstTurn}
		s.sessions[key] = ss
	}
	if ss.waiting >= maxWaiting {
		now := time.Now()
		ss.next = later(ss.next, now.Add(time.Duration(ss.waiting)*ss.took)).Add(ss.took)
		wait = min(max(ss.next.Sub(now), minTurn), maxTurn)
		s.mu.Unlock()
		return nil, wait
	}
	ss.waiting++
	s.mu.Unlock()
	ss.mu.Lock()
	start := time.Now()
	return func() {
		took := time.Since(start)
		ss.mu.Unlock()
		s.mu.Lock()
		ss.waiting--
		ss.took = max((3*ss.took+took)/4, minTurn)
		s.mu.Unlock()
	}, 0
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// failed counts a failure of the download keyed key and returns the count.
// The count lives in this process: a restart gives a download its tries
// again, still bounded.
func (s *Sink) failed(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[key]++
	return s.failures[key]
}

func (s *Sink) forget(key string) {
	s.mu.Lock()
	delete(s.failures, key)
	s.mu.Unlock()
}

// client is the guarded client for downloads: the address guard of every
// source, redirects handed back (get follows them), a bound on waiting
// for an answer's header; the whole download is bounded by Timeout.
func (s *Sink) client(allowPrivate bool, route *egress.Route) *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := clientKey{allowPrivate, route.Key()}
	c, ok := s.clients[k]
	if !ok {
		c = &http.Client{
			Transport:     egress.Transport(egress.Options{AllowPrivate: allowPrivate, Route: route}),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		s.clients[k] = c
	}
	return c
}

// clientKey tells the download clients apart: by guard and by route.
type clientKey struct {
	allowPrivate bool
	route        string
}

// failure is a classified download failure; its reason is short and
// secret-free (I10).
type failure struct {
	retry  bool // provably harmless to try again later
	after  time.Duration
	reason string
}

func (f *failure) Error() string { return f.reason }

func retryable(reason string) error { return &failure{retry: true, reason: reason} }
func final(reason string) error     { return &failure{reason: reason} }

// fetch downloads f and writes it; it returns where it was written,
// relative to the task's dir.
func (s *Sink) fetch(ctx context.Context, plan Plan, f *watch.File, d delivery.Delivery) (string, error) {
	g := &getter{c: s.client(plan.AllowPrivate, plan.Route), plan: plan}
	src, err := g.source(ctx, f)
	if err != nil {
		return "", err
	}
	if f.Size > s.o.MaxBytes {
		return "", final("too_large")
	}
	resp, err := g.get(ctx, src)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	htmlOK := expectsHTML(f.Name, f.ContentType)
	if ct := strings.ToLower(resp.Header.Get("Content-Type")); !htmlOK && strings.HasPrefix(ct, "text/html") {
		return "", final("html_not_file")
	}
	root, err := openDir(s.o.Dir, d.Message.TaskID, plan.Dir)
	if err != nil {
		return "", final("dir")
	}
	defer root.Close()
	want := f.Size
	if want <= 0 {
		want = -1 // an empty or unknown size is not checked
	}
	rel := relName(f)
	tmp := ".herald-" + strings.TrimPrefix(d.Key, "fx_") + ".part"
	_, err = save(root, rel, tmp, resp.Body, want, s.o.MaxBytes, htmlOK)
	switch {
	case err == nil:
		return rel, nil
	case errors.Is(err, errNotAFile):
		return "", final("html_not_file")
	case errors.Is(err, errTooLarge):
		return "", final("too_large")
	case errors.Is(err, errSize):
		return "", retryable("size_mismatch")
	case ctx.Err() != nil:
		return "", retryable("interrupted")
	}
	return "", retryable(fmt.Sprintf("write_%s", writeClass(err)))
}

func writeClass(err error) string {
	var pe interface{ Timeout() bool }
	if errors.As(err, &pe) && pe.Timeout() {
		return "timeout"
	}
	return "error"
}

// PlannerFunc adapts a function to Planner.
type PlannerFunc func(ctx context.Context, taskID string) (Plan, error)

// DownloadPlan implements Planner.
func (f PlannerFunc) DownloadPlan(ctx context.Context, taskID string) (Plan, error) {
	return f(ctx, taskID)
}
