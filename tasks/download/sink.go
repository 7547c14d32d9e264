package download

import (
	"context"
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

	mu      sync.Mutex
	clients map[bool]*http.Client // by AllowPrivate
	tasks   map[string]*sync.Mutex
}

// NewSink returns a download sink.
func NewSink(o Options) *Sink {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Sink{o: o, clients: map[bool]*http.Client{}, tasks: map[string]*sync.Mutex{}}
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
	plan, err := s.o.Plans.DownloadPlan(ctx, d.Message.TaskID)
	switch {
	case errors.Is(err, ErrGone):
		return delivery.Outcome{Result: delivery.Failed, Reason: "task_gone"}
	case errors.Is(err, ErrScope):
		return delivery.Outcome{Result: delivery.Failed, Reason: "out_of_scope"}
	case err != nil:
		return delivery.Outcome{Result: delivery.RetryAfter, After: time.Minute, Reason: "store"}
	}
	// One request at a time per task: its site and token.
	lock := s.taskLock(d.Message.TaskID)
	lock.Lock()
	defer lock.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	rel, err := s.fetch(ctx, plan, &f, d)
	if err == nil {
		return delivery.Outcome{Result: delivery.Completed, ProviderID: rel}
	}
	var fl *failure
	if !errors.As(err, &fl) {
		fl = &failure{retry: true, reason: "write"}
	}
	if !fl.retry || d.Attempt >= maxAttempts {
		return delivery.Outcome{Result: delivery.Failed, Reason: fl.reason}
	}
	after := fl.after
	if after <= 0 {
		after = min(time.Second<<max(d.Attempt-1, 0), 5*time.Minute)
	}
	return delivery.Outcome{Result: delivery.RetryAfter, After: after, Reason: fl.reason}
}

func (s *Sink) taskLock(id string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.tasks[id]
	if !ok {
		l = &sync.Mutex{}
		s.tasks[id] = l
	}
	return l
}

func (s *Sink) client(allowPrivate bool) *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[allowPrivate]
	if !ok {
		c = egress.Client(egress.Options{AllowPrivate: allowPrivate, Timeout: s.o.Timeout})
		s.clients[allowPrivate] = c
	}
	return c
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
	g := &getter{c: s.client(plan.AllowPrivate), plan: plan}
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
