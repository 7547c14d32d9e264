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

	"github.com/herald-bridge/herald/delivery"
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
	Store   store.Store
	Sources SourceOpener
	Policy  Policy
	Clock   Clock          // default RealClock
	Zone    *time.Location // default zone for schedules; default UTC
	Log     zerolog.Logger
	// Holder names this replica (lease holder, delivery worker id).
	Holder string
	// LeaseTTL is a scheduling shard lease's lifetime (default 15 s;
	// renewed every TTL/4).
	LeaseTTL time.Duration
	// Shards shares the scheduling shards among replicas (I5). nil: the
	// store's own when it has them, else the one scheduler lease.
	Shards store.ShardLeases
	// WakeDelivery is called after effects were queued.
	WakeDelivery func()
	// Alive reports whether a delivery worker is still running; in-flight
	// attempts of dead workers become unknown on recovery (I3).
	Alive func(worker string) bool
	// Replay reports whether an interrupted push that may have been sent
	// may be sent again under its key (its recipient deduplicates by it);
	// nil: never (I3).
	Replay func(fx store.Effect) bool
	// RetryWaits are the waits between source attempts (I6); default 1 s, 2 s.
	RetryWaits []time.Duration
	// Direct, when set, lets an admission for one recipient claim its push
	// already in flight for a free local delivery worker and hand it over,
	// instead of queueing it (one durable round fewer).
	Direct Direct
	// Observe, when set, hears of every run recorded in a task's history,
	// with the task's source kind ("" when detected) (metrics).
	Observe func(kind string, r RunRecord)
}

// Direct hands pushes to free local delivery workers (delivery.Dispatcher).
type Direct interface {
	Reserve(ctx context.Context, recipient, taskID string) (worker string, release func(), ok bool)
	// Handoff sends fxs, whose payloads encode msg (so it need not be
	// decoded again).
	Handoff(fxs []store.Effect, msg delivery.Message, release func())
	// Unconfirmed is told of a claim in flight for the reserved worker
	// whose commit failed without a clear answer: it may have been stored,
	// and then nobody would send it.
	Unconfirmed(key string)
}

func (o *Options) validate() error {
	if o.Store == nil {
		return errors.New("tasks: Options.Store is required")
	}
	if o.Sources == nil {
		return errors.New("tasks: Options.Sources is required")
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Zone == nil {
		o.Zone = time.UTC
	}
	if o.Holder == "" {
		o.Holder = "herald-" + randomID(4)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.WakeDelivery == nil {
		o.WakeDelivery = func() {}
	}
	if o.Alive == nil {
		holder := o.Holder
		o.Alive = func(w string) bool { return w == holder }
	}
	if o.RetryWaits == nil {
		o.RetryWaits = []time.Duration{time.Second, 2 * time.Second}
	}
	return nil
}

// Change is a signal that a task changed; readers re-query the record.
type Change struct {
	TaskID string
	What   string // requested | approved | rejected | paused | resumed | deleted | run | unreachable
}

// Manager owns the catalog, the clock and effect admission.
type Manager struct {
	o     Options
	store store.Store
	clock Clock
	log   zerolog.Logger

	mu     sync.Mutex
	policy Policy
	shards shardSet // the scheduling shards this replica owns (I5)
	subs   []chan Change

	wake    chan struct{}
	dirtyMu sync.Mutex
	dirty   map[string]bool

	// createMu makes counting live tasks and creating one a single step
	// within this replica; CreateLease does across replicas (I7).
	createMu sync.Mutex

	runMu    sync.Mutex
	running  map[string]*runSlot
	sessions map[string]chan struct{} // one slot per source session (I7)
	runs     *slots                   // the global cap on runs at once (I7)
	hosts    *hostGate                // the per-host politeness cap
	watching *watching                // collapsed baseline confirmations
}

// New returns a Manager; call Run to start scheduling.
func New(o Options) (*Manager, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.Policy.Limits = o.Policy.Limits.withDefaults()
	return &Manager{
		o: o, store: o.Store, clock: o.Clock, log: o.Log, policy: o.Policy,
		wake: make(chan struct{}, 1), dirty: map[string]bool{},
		running: map[string]*runSlot{}, sessions: map[string]chan struct{}{},
		runs: newSlots(o.Policy.Limits.Concurrency), hosts: newHostGate(), watching: newWatching(),
	}, nil
}

// Policy returns the policy in force.
func (m *Manager) Policy() Policy {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.policy
}

// SetPolicy swaps the policy (config reload).
func (m *Manager) SetPolicy(p Policy) {
	p.Limits = p.Limits.withDefaults()
	m.mu.Lock()
	m.policy = p
	m.mu.Unlock()
	m.runs.resize(p.Limits.Concurrency)
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

func (m *Manager) signal(id, what string) {
	m.mu.Lock()
	for _, c := range m.subs {
		select {
		case c <- Change{TaskID: id, What: what}:
		default: // signals only: a slow reader re-queries anyway
		}
	}
	m.mu.Unlock()
	m.touch(id)
}

// touch asks the scheduling loop to re-read a task.
func (m *Manager) touch(id string) {
	m.dirtyMu.Lock()
	m.dirty[id] = true
	m.dirtyMu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) wakeDelivery() { m.o.WakeDelivery() }

// ---------------------------------------------------------------- writes

// Submission is a request for a new task (from chat, CLI or the assistant).
type Submission struct {
	Principal    string
	By           string // the requester's display name, for the admins ("" none)
	ReplyTo      string // the requesting chat's address
	Lang         string
	URL          string
	Kind         string
	Selector     string // html: the CSS selector of the entries ("" picks one)
	Schedule     string // "" → every 1h
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
	// Fields are a source's fields beyond its address, kind, selector and
	// courses, from an imported task (README, Export, import and backup).
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
	m.signal(t.ID, "requested")
	if t.State == Active {
		m.signal(t.ID, "approved")
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
		return nil, userErr(ErrForbidden, "you are not allowed to request watches; ask an admin",
			"你没有申请关注的权限；请联系管理员。")
	}
	u, err := url.Parse(strings.TrimSpace(s.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, userErr(ErrInvalid, "that is not a web address I can watch (it must start with http:// or https://)",
			"这不是可以关注的网址（必须以 http:// 或 https:// 开头）。")
	}
	if u.User != nil {
		return nil, userErr(ErrInvalid, "please leave credentials out of the URL", "请不要把账号密码写在网址里。")
	}
	if !source.Valid(s.Kind) {
		return nil, userErr(ErrInvalid, "unknown kind %q: use %s", "未知的类型 %q；请用 %s。", s.Kind,
			Text{En: source.List("", "", ", ", " or "), Zh: source.List("", "", "、", " 或 ")})
	}
	if (len(s.Courses) > 0 || s.StoredToken) && !source.TakesToken(s.Kind) {
		return nil, userErr(ErrInvalid, "courses and access tokens belong to course sites (canvas, moodle)",
			"课程和访问令牌只适用于课程网站（canvas、moodle）。")
	}
	if s.Schedule == "" {
		s.Schedule = "every 1h"
	}
	sched, err := schedule.Parse(s.Schedule, m.o.Zone)
	if err != nil {
		return nil, userErr(ErrInvalid, "I could not read the schedule: %v",
			"无法识别时间安排（%v）；例如 every 1h 或 daily 08:00。", err)
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
	spec := watch.Spec{Kind: s.Kind, URL: u.String(), Selector: strings.TrimSpace(s.Selector), Courses: s.Courses}
	s.Fields.fill(&spec)
	if s.StoredToken {
		spec.TokenFrom = s.Principal // the requester's own credential, never another's
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

// update applies fn to the stored task with compare-and-swap, retrying
// when someone else changed it in between.
func (m *Manager) update(ctx context.Context, id string, fn func(t *Task) error) (*Task, error) {
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
		return nil, userErr(ErrForbidden, "only an admin can approve requests", "只有管理员可以批准申请。")
	}
	t, err := m.update(ctx, id, func(t *Task) error {
		if t.State != PendingApproval {
			return userErr(ErrState, "request %s is already %s", "申请 %s 已经是“%s”状态。", t.Request.ID, StateText(t.State))
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
	m.log.Info().Str("task", t.ID).Msg("request approved")
	m.signal(t.ID, "approved")
	return t, nil
}

// Reject rejects a pending request (admins only).
func (m *Manager) Reject(ctx context.Context, who, id, reason string) (*Task, error) {
	if who != "" && !m.Policy().IsAdmin(who) {
		return nil, userErr(ErrForbidden, "only an admin can reject requests", "只有管理员可以拒绝申请。")
	}
	t, err := m.update(ctx, id, func(t *Task) error {
		if t.State != PendingApproval {
			return userErr(ErrState, "request %s is already %s", "申请 %s 已经是“%s”状态。", t.Request.ID, StateText(t.State))
		}
		t.State = Rejected
		t.Decision = &Decision{By: who, At: m.clock.Now(), Reason: reason}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.signal(t.ID, "rejected")
	return t, nil
}

// Pause stops scheduling a task (owner or admin).
func (m *Manager) Pause(ctx context.Context, who, id string) (*Task, error) {
	return m.transition(ctx, who, id, "paused", func(t *Task) error {
		if t.State != Active && t.State != Errored {
			return userErr(ErrState, "task %s is %s, not active", "任务 %s 当前为“%s”，不在运行中。", t.ID, StateText(t.State))
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
			return userErr(ErrState, "task %s is %s, not paused", "任务 %s 当前为“%s”，没有暂停。", t.ID, StateText(t.State))
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
			return userErr(ErrState, "task %s is already deleted", "任务 %s 已经删除了。", t.ID)
		}
		t.State = Deleted
		return nil
	})
}

func (m *Manager) transition(ctx context.Context, who, id, what string, fn func(t *Task) error) (*Task, error) {
	t, err := m.update(ctx, id, func(t *Task) error {
		if !m.mayManage(who, t) {
			return userErr(ErrForbidden, "only the task's owner or an admin can do that", "只有任务的创建者或管理员可以这样做。")
		}
		return fn(t)
	})
	if err != nil {
		return nil, err
	}
	m.signal(t.ID, what)
	return t, nil
}

// MarkUnreachable records that the provider reports recipient as
// unreachable (bot blocked or kicked) and tells the owner once.
func (m *Manager) MarkUnreachable(ctx context.Context, taskID, recipient, reason string) error {
	t, err := m.update(ctx, taskID, func(t *Task) error {
		if slices.Contains(t.Unreachable, recipient) {
			return errSkip
		}
		t.Unreachable = append(t.Unreachable, recipient)
		return nil
	})
	if errors.Is(err, errSkip) || errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	m.signal(t.ID, "unreachable")
	if t.ownerAddress() == recipient {
		return nil
	}
	title, text := m.say(ctx, t, noticeUnreachable, t.displayName(), reason)
	fx, err := noticeEffect(t, "unreachable|"+recipient, title, text, m.clock.Now())
	if err != nil {
		return err
	}
	_, err = m.store.Ledger().Commit(ctx, store.RunCommit{TaskID: t.ID, Effects: []store.Effect{fx}})
	m.wakeDelivery()
	return err
}

// MigrateRecipient replaces a recipient the provider moved (Telegram
// migrate_to_chat_id). The grant follows: this is the same chat.
func (m *Manager) MigrateRecipient(ctx context.Context, taskID, from, to string) error {
	_, err := m.update(ctx, taskID, func(t *Task) error {
		i := slices.Index(t.Notify, from)
		if i < 0 {
			return errSkip
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
	if errors.Is(err, errSkip) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

var errSkip = errors.New("nothing to change")

func stateWord(s State) string { return strings.ReplaceAll(string(s), "_", " ") }

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var _ SourceOpener = SourceOpenerFunc(nil)
