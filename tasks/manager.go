package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Source fetches the current items of one watched source.
type Source interface {
	Fetch(ctx context.Context, cond watch.Conditional) (watch.Result, error)
}

// SourceOpener builds the Source for a spec (one registry: tasks/source).
type SourceOpener interface {
	Open(spec watch.Spec, zone *time.Location) (Source, error)
}

// Scope is where an approved task may read from (I8): its grant's host
// and path prefix. Redirects outside it are refused.
type Scope struct {
	Host       string
	PathPrefix string
}

// ScopedOpener is a SourceOpener that can confine a source to its scope;
// the manager uses it whenever the task has a grant.
type ScopedOpener interface {
	OpenScoped(spec watch.Spec, zone *time.Location, scope Scope) (Source, error)
}

// SourceOpenerFunc adapts a function to SourceOpener.
type SourceOpenerFunc func(spec watch.Spec, zone *time.Location) (Source, error)

// Open calls f.
func (f SourceOpenerFunc) Open(spec watch.Spec, zone *time.Location) (Source, error) {
	return f(spec, zone)
}

// Options configure a Manager.
type Options struct {
	Store  store.Store
	Policy Policy
	Clock  Clock          // default RealClock
	Zone   *time.Location // default zone for schedules; default UTC
	Log    zerolog.Logger
	// Holder names this replica (lease holder, delivery worker id).
	Holder string
	// WakeDelivery is called after effects were queued.
	WakeDelivery func()
	// Resolve looks a source's host name up when a request is judged
	// (nil: the system resolver); the guard judges what it answers.
	Resolve source.Resolver
}

func (o *Options) validate() error {
	if o.Store == nil {
		return errors.New("tasks: Options.Store is required")
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Zone == nil {
		o.Zone = time.UTC
	}
	if o.Holder == "" {
		o.Holder = "herald-" + RandomID(4)
	}
	if o.WakeDelivery == nil {
		o.WakeDelivery = func() {}
	}
	return nil
}

// Change is a signal that a task changed; readers re-query the record.
type Change struct {
	TaskID string
	What   string // requested | approved | rejected | paused | resumed | deleted | run | unreachable
}

// Runs is what the catalog needs from scheduling (tasks/scheduler): to
// hear that a task changed, and to run a task now for a person who may.
type Runs interface {
	// Touch asks for task id to be planned again.
	Touch(id string)
	// RunNow runs task id now and returns its record; ErrNotOwner when
	// this replica does not schedule it.
	RunNow(ctx context.Context, id string) (RunRecord, error)
	// Rebaseline reads t's source and keeps what it lists as t's
	// snapshot, under the scheduling fence; ErrNotOwner as RunNow, and
	// ErrUnreadable (wrapping the classified error) when the source
	// could not be read.
	Rebaseline(ctx context.Context, t *Task) error
	// SetLimits applies a reloaded policy's limits to the caps on runs.
	SetLimits(l Limits)
}

// Manager is the task catalog: the model, the policy, requests and
// approvals, pause, resume and delete, the limits, declared tasks, and
// every read of tasks and their history. Scheduling and running are
// tasks/scheduler's and tasks/runner's; the catalog tells the scheduler
// when a task changes.
type Manager struct {
	o     Options
	store store.Store
	clock Clock
	log   zerolog.Logger

	// create makes counting live tasks and creating one a single step
	// within this replica; CreateLease does across replicas (I7). It is a
	// one-place semaphore, not a mutex: a create waits for it only while
	// its request lives.
	create chan struct{}

	mu     sync.Mutex
	policy Policy
	subs   []chan Change
	runs   Runs
}

// New returns a Manager. Attach a scheduler (SetRuns) for runs to happen.
func New(o Options) (*Manager, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.Policy.Limits = o.Policy.Limits.withDefaults()
	return &Manager{
		o: o, store: o.Store, clock: o.Clock, log: o.Log, policy: o.Policy,
		create: make(chan struct{}, 1),
	}, nil
}

// SetRuns attaches the scheduler that plans and runs the catalog's tasks.
func (m *Manager) SetRuns(r Runs) {
	m.mu.Lock()
	m.runs = r
	m.mu.Unlock()
}

func (m *Manager) scheduler() Runs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs
}

// Policy returns the policy in force.
func (m *Manager) Policy() Policy {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.policy
}

// SetPolicy swaps the policy (config reload), and the scheduler's caps.
func (m *Manager) SetPolicy(p Policy) {
	p.Limits = p.Limits.withDefaults()
	m.mu.Lock()
	m.policy = p
	r := m.runs
	m.mu.Unlock()
	if r != nil {
		r.SetLimits(p.Limits)
	}
}

// Subscribe returns a channel of change signals and a cancel func.
func (m *Manager) Subscribe() (<-chan Change, func()) {
	ch := make(chan Change, 64)
	m.mu.Lock()
	m.subs = append(m.subs, ch)
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, c := range m.subs {
			if c == ch {
				m.subs = slices.Delete(m.subs, i, i+1)
				close(ch)
				return
			}
		}
	}
}

// Signal tells subscribers that task id changed (what: see Change) and
// asks the scheduler to plan it again.
func (m *Manager) Signal(id, what string) {
	m.mu.Lock()
	for _, c := range m.subs {
		select {
		case c <- Change{TaskID: id, What: what}:
		default: // signals only: a slow reader re-queries anyway
		}
	}
	r := m.runs
	m.mu.Unlock()
	if r != nil {
		r.Touch(id)
	}
}

// lockCreate takes the create semaphore, or gives up when ctx ends.
func (m *Manager) lockCreate(ctx context.Context) error {
	select {
	case m.create <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ---------------------------------------------------------------- writes

// Submission is a request for a new task (from chat, CLI or the assistant).
type Submission struct {
	Principal string
	By        string // the requester's display name, for the admins ("" none)
	ReplyTo   string // the requesting chat's address
	Lang      string
	URL       string
	Kind      string
	Selector  string // html: the CSS selector of the entries ("" picks one)
	Schedule  string // "" → every 1h
	// Parsed is Schedule already parsed (a chat command's); nil: parse it.
	Parsed       schedule.Schedule
	Name         string
	RemindBefore []time.Duration
	Notify       []string // "" → ReplyTo, else the requester's inbox
	Include      []string
	Exclude      []string
	// Courses are a course site's course ids (empty: every active course).
	Courses []string
	// StoredToken: a course site read with the token the requester gave
	// in chat, kept in the credential store (never in the task).
	StoredToken bool
	// StoredCookie: a page read with the sign-in cookie the requester
	// gave in chat (/login), kept in the credential store (never in the task).
	StoredCookie bool
	// Fields are a source's fields beyond its address, kind, selector and
	// courses, from an imported task (docs/operations.md, Export, import and backup).
	Fields SourceFields
}

// SourceFields are the parts of a source a chat request has no words for:
// a json source's field paths, a course site's lists. A submission never
// carries headers or a token (I10): an imported task that needs them is
// not submitted.
type SourceFields struct {
	Items, ID, Title, Link, Due string
	Watch                       []string
}

// fill sets f's fields of spec.
func (f SourceFields) fill(spec *watch.Spec) {
	spec.Items, spec.ID, spec.Title, spec.Link, spec.Due = f.Items, f.ID, f.Title, f.Link, f.Due
	spec.Watch = slices.Clone(f.Watch)
}

// Submit records a request. It is approved at once when an auto_approve
// rule covers it or the requester is an admin; otherwise it waits.
func (m *Manager) Submit(ctx context.Context, s Submission) (*Task, error) {
	p := m.Policy()
	t, err := m.build(p, s)
	if err != nil {
		return nil, err
	}
	if err := m.createWithinLimit(ctx, t, p.Limits, t.CreatedAt); err != nil {
		return nil, err
	}
	m.Signal(t.ID, "requested")
	if t.State == Active {
		m.Signal(t.ID, "approved")
	}
	return t, nil
}

// Preview answers what Submit would make of s — the task, approved or
// awaiting approval, or the error — and writes nothing: a dry run of an
// import. The task limit is the one check it leaves to Submit, which
// counts under the create lease (I7).
func (m *Manager) Preview(s Submission) (*Task, error) {
	return m.build(m.Policy(), s)
}

// build checks s against the policy p and makes its task.
func (m *Manager) build(p Policy, s Submission) (*Task, error) {
	if !p.MayRequest(s.Principal) {
		return nil, userErr(ErrForbidden, "may_not_request", "you are not allowed to request watches; ask an admin")
	}
	route, err := p.rsshubRoute(&s)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(strings.TrimSpace(s.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, userErr(ErrInvalid, "not_web_address", "that is not a web address I can watch (it must start with http:// or https://)")
	}
	if u.User != nil {
		return nil, userErr(ErrInvalid, "credentials_in_url", "please leave credentials out of the URL")
	}
	if route == "" { // an RSSHub instance is the admin's, not the requester's, choice
		if err := m.destination(u, p.AllowPrivate); err != nil {
			return nil, err
		}
	}
	if !source.Valid(s.Kind) {
		return nil, userErr(ErrInvalid, "unknown_kind", "unknown kind %q: use %s", s.Kind, kindChoices{})
	}
	if (len(s.Courses) > 0 || s.StoredToken) && !source.TakesToken(s.Kind) {
		return nil, userErr(ErrInvalid, "token_not_for_kind", "courses and access tokens belong to course sites (canvas, moodle)")
	}
	if s.StoredCookie && source.TakesToken(s.Kind) {
		return nil, userErr(ErrInvalid, "cookie_not_for_kind", "a course site reads with an access token, not a cookie")
	}
	if s.Schedule == "" && s.Parsed == nil {
		s.Schedule = "every 1h"
	}
	sched := s.Parsed
	if sched == nil {
		sched, err = schedule.Parse(s.Schedule, m.o.Zone)
	}
	if err != nil {
		return nil, userErr(ErrInvalid, "bad_schedule", "I could not read the schedule: %v", err.Error())
	}
	notify := s.Notify
	if len(notify) == 0 {
		if s.ReplyTo != "" {
			notify = []string{s.ReplyTo}
		} else {
			notify = []string{address.InboxOf(s.Principal)}
		}
	}
	for _, r := range notify {
		if err := p.mayTarget(s, r); err != nil {
			return nil, err
		}
	}
	now := m.clock.Now()
	spec := watch.Spec{Kind: s.Kind, URL: u.String(), Route: route, Selector: strings.TrimSpace(s.Selector), Courses: s.Courses}
	s.Fields.fill(&spec)
	if s.StoredToken || s.StoredCookie {
		spec.TokenFrom = s.Principal // the requester's own credential, never another's
	}
	if s.StoredCookie {
		spec.Auth = &watch.SignIn{} // the cookie is asked for at each run
	}
	t := &Task{
		Name: strings.TrimSpace(s.Name), Source: spec,
		Schedule: sched.String(), RemindBefore: s.RemindBefore, Notify: notify,
		Include: s.Include, Exclude: s.Exclude, Owner: s.Principal, ReplyTo: s.ReplyTo, Lang: s.Lang,
		Origin: OriginChat, State: PendingApproval, CreatedAt: now, UpdatedAt: now,
		Request: Request{Name: s.By},
	}
	host := strings.ToLower(u.Host)
	switch {
	case p.IsAdmin(s.Principal):
		err = m.approveInto(t, s.Principal, "admin", false, now)
	case p.autoApproved(s.Principal, host):
		err = m.approveInto(t, s.Principal, "auto_approve", true, now)
	case p.HostAllowed(host):
		err = m.approveInto(t, s.Principal, "allowed_hosts", true, now)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (m *Manager) approveInto(t *Task, by, basis string, auto bool, now time.Time) error {
	g, err := grantFor(t, by, basis)
	if err != nil {
		return err
	}
	g.At = now
	t.Grant = g
	if err := m.Policy().checkDownloadScope(t); err != nil { // a download dir the policy does not allow is never granted (I8)
		t.Grant = nil
		return err
	}
	t.Decision = &Decision{By: by, At: now, Approved: true, Auto: auto}
	t.State = Active
	t.NextRun = now // first run now: the baseline (I2)
	return nil
}

// Update applies fn to the stored task with compare-and-swap, retrying
// when someone else changed it in between. fn returning ErrSkip changes
// nothing.
func (m *Manager) Update(ctx context.Context, id string, fn func(t *Task) error) (*Task, error) {
	for range 8 {
		t, err := m.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		id = t.ID
		if err := fn(t); err != nil {
			return nil, err
		}
		t.UpdatedAt = m.clock.Now()
		b, err := encodeTask(t)
		if err != nil {
			return nil, err
		}
		rev, err := m.store.Catalog().Put(ctx, store.Fence{}, id, t.Revision, b)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store task: %w", err)
		}
		t.Revision = rev
		return t, nil
	}
	return nil, fmt.Errorf("update %s: %w", id, store.ErrConflict)
}

func (m *Manager) mayManage(who string, t *Task) bool {
	return who == "" || who == t.Owner || m.Policy().IsAdmin(who)
}

// Approve approves a pending request (admins only).
func (m *Manager) Approve(ctx context.Context, who, id string) (*Task, error) {
	p := m.Policy()
	if who != "" && !p.IsAdmin(who) {
		return nil, userErr(ErrForbidden, "approve_admin_only", "only an admin can approve requests")
	}
	t, err := m.Update(ctx, id, func(t *Task) error {
		if t.State != PendingApproval {
			return userErr(ErrState, "request_decided", "request %s is already %s", t.Request.ID, StateText(t.State))
		}
		basis := "admin"
		if u, err := url.Parse(t.Source.URL); err == nil && p.HostAllowed(u.Host) {
			basis = "allowed_hosts"
		}
		return m.approveInto(t, who, basis, false, m.clock.Now())
	})
	if err != nil {
		return nil, err
	}
	m.audit("approve", who, t, "")
	m.Signal(t.ID, "approved")
	return t, nil
}

// Reject rejects a pending request (admins only).
func (m *Manager) Reject(ctx context.Context, who, id, reason string) (*Task, error) {
	if who != "" && !m.Policy().IsAdmin(who) {
		return nil, userErr(ErrForbidden, "reject_admin_only", "only an admin can reject requests")
	}
	t, err := m.Update(ctx, id, func(t *Task) error {
		if t.State != PendingApproval {
			return userErr(ErrState, "request_decided", "request %s is already %s", t.Request.ID, StateText(t.State))
		}
		t.State = Rejected
		t.Decision = &Decision{By: who, At: m.clock.Now(), Reason: reason}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.audit("reject", who, t, reason)
	m.Signal(t.ID, "rejected")
	return t, nil
}

// Pause stops scheduling a task (owner or admin).
func (m *Manager) Pause(ctx context.Context, who, id string) (*Task, error) {
	return m.transition(ctx, who, id, "paused", func(t *Task) error {
		if t.State != Active && t.State != Errored {
			return userErr(ErrState, "not_active", "task %s is %s, not active", t.ID, StateText(t.State))
		}
		t.State = Paused
		return nil
	})
}

// Resume restarts a paused task after re-checking its scope (I8).
func (m *Manager) Resume(ctx context.Context, who, id string) (*Task, error) {
	p := m.Policy()
	return m.transition(ctx, who, id, "resumed", func(t *Task) error {
		if t.State != Paused && t.State != Errored {
			return userErr(ErrState, "not_paused", "task %s is %s, not paused", t.ID, StateText(t.State))
		}
		if err := p.checkScope(t); err != nil {
			return err
		}
		t.State = Active
		t.NextRun = m.clock.Now()
		return nil
	})
}

// Delete removes a task from scheduling (owner or admin). Its record,
// ledger and history stay readable.
func (m *Manager) Delete(ctx context.Context, who, id string) (*Task, error) {
	return m.transition(ctx, who, id, "deleted", func(t *Task) error {
		if t.State == Deleted {
			return userErr(ErrState, "already_deleted", "task %s is already deleted", t.ID)
		}
		t.State = Deleted
		return nil
	})
}

func (m *Manager) transition(ctx context.Context, who, id, what string, fn func(t *Task) error) (*Task, error) {
	t, err := m.Update(ctx, id, func(t *Task) error {
		if !m.mayManage(who, t) {
			return userErr(ErrForbidden, "owner_or_admin", "only the task's owner or an admin can do that")
		}
		return fn(t)
	})
	if err != nil {
		return nil, err
	}
	m.audit(strings.TrimSuffix(what, "d"), who, t, "") // paused → pause
	m.Signal(t.ID, what)
	return t, nil
}

// audit writes the one log line an act on a task leaves: what was done
// ("approve", "reject", "pause", "resume", "delete"), by whom (a
// principal; "cli" for the admin API the CLI uses), to
// which task and request, and a rejection's reason. No address or secret
// is part of it (I10).
func (m *Manager) audit(act, who string, t *Task, reason string) {
	if who == "" {
		who = "cli"
	}
	ev := m.log.Info().Str("audit", act).Str("by", who).Str("task", t.ID).Str("request", t.Request.ID)
	if reason != "" {
		ev = ev.Str("reason", reason)
	}
	ev.Msg("audit")
}

// MarkUnreachable records that the provider reports recipient as
// unreachable (bot blocked or kicked) and tells the owner once.
func (m *Manager) MarkUnreachable(ctx context.Context, taskID, recipient, reason string) error {
	t, err := m.markUnreachable(ctx, taskID, recipient)
	if t == nil || err != nil {
		return err
	}
	if t.OwnerAddress() == recipient {
		return nil
	}
	title, text := Say(ctx, m.store, t, NoticeUnreachable, t.DisplayName(), reason)
	fx, err := NoticeEffect(t, "unreachable|"+recipient, title, text, m.clock.Now())
	if err != nil {
		return err
	}
	_, err = m.store.Ledger().Commit(ctx, store.RunCommit{TaskID: t.ID, Effects: []store.Effect{fx}})
	m.o.WakeDelivery()
	return err
}

// markUnreachable records recipient among the task's unreachable ones;
// the task is nil when it was recorded already, or the task is gone.
func (m *Manager) markUnreachable(ctx context.Context, taskID, recipient string) (*Task, error) {
	t, err := m.Update(ctx, taskID, func(t *Task) error {
		if slices.Contains(t.Unreachable, recipient) {
			return ErrSkip
		}
		t.Unreachable = append(t.Unreachable, recipient)
		return nil
	})
	if errors.Is(err, ErrSkip) || errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m.Signal(t.ID, "unreachable")
	return t, nil
}

// MigrateRecipient replaces a recipient the provider moved (Telegram
// migrate_to_chat_id). The grant follows: this is the same chat.
func (m *Manager) MigrateRecipient(ctx context.Context, taskID, from, to string) error {
	_, err := m.Update(ctx, taskID, func(t *Task) error {
		i := slices.Index(t.Notify, from)
		if i < 0 {
			return ErrSkip
		}
		t.Notify[i] = to
		if t.Grant != nil {
			if j := slices.Index(t.Grant.Recipients, from); j >= 0 {
				t.Grant.Recipients[j] = to
			}
		}
		if t.ReplyTo == from {
			t.ReplyTo = to
		}
		return nil
	})
	if errors.Is(err, ErrSkip) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// ErrSkip, returned by an Update func, leaves the task as it is.
var ErrSkip = errors.New("nothing to change")

func stateWord(s State) string { return strings.ReplaceAll(string(s), "_", " ") }

// RandomID is n random bytes in hex: run and notice ids.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var _ SourceOpener = SourceOpenerFunc(nil)
