package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	// LeaseTTL is the scheduling lease's lifetime (default 15 s; renewed every TTL/3).
	LeaseTTL time.Duration
	// WakeDelivery is called after effects were queued.
	WakeDelivery func()
	// Alive reports whether a delivery worker is still running; in-flight
	// attempts of dead workers become unknown on recovery (I3).
	Alive func(worker string) bool
	// RetryWaits are the waits between source attempts (I6); default 1 s, 2 s.
	RetryWaits []time.Duration
	// Direct, when set, lets an admission for one recipient claim its push
	// already in flight for a free local delivery worker and hand it over,
	// instead of queueing it (one durable round fewer).
	Direct Direct
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
	fence  store.Fence // zero when not owner
	// ownerCtx lives while this replica owns scheduling (nil otherwise).
	ownerCtx context.Context
	// ownerCancel ends ownerCtx when a commit shows the epoch is stale.
	ownerCancel context.CancelFunc
	subs        []chan Change

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
		runs: newSlots(o.Policy.Limits.Concurrency),
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

// Owner reports whether this replica owns scheduling now, and its epoch.
func (m *Manager) Owner() (bool, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.fence.IsZero(), m.fence.Epoch
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

// ---------------------------------------------------------------- reads

// Get returns a task by task id ("t-…") or request id ("r-…").
//
// A request id names its task: "r-7f3a" is task "t-7f3a", and for a task
// declared in config, "r-campus-news" is task "campus-news".
func (m *Manager) Get(ctx context.Context, id string) (*Task, error) {
	typed := strings.TrimSpace(id)
	for _, cand := range candidateIDs(typed) {
		rec, err := m.store.Catalog().Get(ctx, cand)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read task: %w", err)
		}
		return decodeTask(rec.Value, rec.Revision)
	}
	return nil, userErr(ErrNotFound, "there is no task or request %s",
		"没有编号为 %s 的任务或申请；发送 /tasks 查看。", typed)
}

// taskID returns the task id that id names (see Get), or id itself.
func (m *Manager) taskID(ctx context.Context, id string) string {
	if t, err := m.Get(ctx, id); err == nil {
		return t.ID
	}
	return strings.TrimSpace(id)
}

func candidateIDs(id string) []string {
	if rest, ok := strings.CutPrefix(id, "r-"); ok && rest != "" {
		return []string{id, "t-" + rest, rest}
	}
	return []string{id}
}

// List returns the tasks visible to who (admins: all), not deleted.
func (m *Manager) List(ctx context.Context, who string) ([]*Task, error) {
	all, err := m.all(ctx)
	if err != nil {
		return nil, err
	}
	admin := m.Policy().IsAdmin(who) || who == ""
	var out []*Task
	for _, t := range all {
		if t.State == Deleted {
			continue
		}
		if admin || t.Owner == who {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *Task) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func (m *Manager) all(ctx context.Context) ([]*Task, error) {
	recs, err := m.store.Catalog().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	out := make([]*Task, 0, len(recs))
	for _, r := range recs {
		t, err := decodeTask(r.Value, r.Revision)
		if err != nil {
			m.log.Error().Str("task", r.ID).Err(err).Msg("skipping unreadable task record")
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// Runs returns a task's newest runs.
func (m *Manager) Runs(ctx context.Context, id string, limit int) ([]RunRecord, error) {
	raw, err := m.store.Runs().List(ctx, m.taskID(ctx, id), limit)
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	out := make([]RunRecord, 0, len(raw))
	for _, b := range raw {
		var r RunRecord
		if err := json.Unmarshal(b, &r); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Effects returns a task's (or hook's) ledger entries, newest first.
func (m *Manager) Effects(ctx context.Context, source string, limit int) ([]store.Effect, error) {
	return m.store.Ledger().List(ctx, m.taskID(ctx, source), limit)
}

// Redeliver makes a new recorded attempt of an ended effect on the same
// key (an explicit human replay, recorded with who).
func (m *Manager) Redeliver(ctx context.Context, who, key string) (store.Effect, error) {
	fx, err := m.store.Ledger().Get(ctx, key)
	if err != nil {
		return fx, fmt.Errorf("redeliver: %w", err)
	}
	if t, err := m.Get(ctx, fx.TaskID); err == nil {
		if !m.mayManage(who, t) {
			return fx, userErr(ErrForbidden, "only the task's owner or an admin can redeliver its effects",
				"只有任务的创建者或管理员可以重新投递它的推送。")
		}
	} else if !m.Policy().IsAdmin(who) && who != "" {
		return fx, userErr(ErrForbidden, "only an admin can redeliver this effect", "只有管理员可以重新投递这条推送。")
	}
	fx, err = m.store.Ledger().Redeliver(ctx, key, who, m.clock.Now())
	if err != nil {
		return fx, fmt.Errorf("redeliver: %w", err)
	}
	m.wakeDelivery()
	return fx, nil
}

// ---------------------------------------------------------------- writes

// Submission is a request for a new task (from chat, CLI or the assistant).
type Submission struct {
	Principal    string
	By           string // the requester's display name, for the admins ("" none)
	ReplyTo      string // the requesting chat's address
	Lang         string
	URL          string
	Kind         string
	Schedule     string // "" → every 1h
	Name         string
	RemindBefore []time.Duration
	Notify       []string // "" → ReplyTo, else the requester's inbox
	Include      []string
	Exclude      []string
}

// Submit records a request. It is approved at once when an auto_approve
// rule covers it or the requester is an admin; otherwise it waits.
func (m *Manager) Submit(ctx context.Context, s Submission) (*Task, error) {
	p := m.Policy()
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
	switch s.Kind {
	case "", "rss", "ical", "json", "html":
	default:
		return nil, userErr(ErrInvalid, "unknown kind %q: use rss, ical, json or html",
			"未知的类型 %q；请用 rss、ical、json 或 html。", s.Kind)
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
	t := &Task{
		Name: strings.TrimSpace(s.Name), Source: watch.Spec{Kind: s.Kind, URL: u.String()},
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
	if err := m.createWithinLimit(ctx, t, p.Limits.MaxTasks, now); err != nil {
		return nil, err
	}
	m.signal(t.ID, "requested")
	if t.State == Active {
		m.signal(t.ID, "approved")
	}
	return t, nil
}

// mayTarget checks that a chat request targets only the requesting chat,
// the requester's inbox, or named recipients the policy lets it use (§3).
func (p Policy) mayTarget(s Submission, r string) error {
	switch {
	case r == s.ReplyTo && r != "":
		return nil
	case r == address.InboxOf(s.Principal):
		return nil
	case !delivery.IsLiteral(r):
		if !p.Named[r] {
			return userErr(ErrInvalid, "there is no recipient named %s", "没有名为 %s 的接收方。", r)
		}
		if !p.IsAdmin(s.Principal) {
			return userErr(ErrForbidden, "only an admin can send to %s", "只有管理员可以推送到 %s。", r)
		}
		return nil
	case p.IsAdmin(s.Principal):
		if _, err := delivery.ParseAddress(r); err != nil {
			return userErr(ErrInvalid, "%v", "接收地址无效（%v）。", err)
		}
		return nil
	}
	return userErr(ErrForbidden, "you can only have pushes sent to this chat or your inbox",
		"只能推送到本聊天或你的收件箱。")
}

func (m *Manager) countLive(ctx context.Context) (int, error) {
	all, err := m.all(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range all {
		if t.State != Deleted && t.State != Rejected {
			n++
		}
	}
	return n, nil
}

// CreateLease is the lease under which a replica counts the live tasks
// and creates one, so that the task limit holds across replicas (I7).
const CreateLease = "task-create"

// createLeaseTTL bounds how long a replica that dies while creating a task
// keeps the others from creating one. Counting and one catalog write take
// far less; a holder that stalls past it cannot write (see createWithinLimit).
const createLeaseTTL = 5 * time.Second

// createWaits are the waits between attempts to take CreateLease while
// another replica holds it: about 3 s in all, then the request is refused
// with a plain "try again" rather than left hanging.
var createWaits = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond,
	160 * time.Millisecond, 320 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
	500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
}

// createWithinLimit stores t as a new task unless the live tasks already
// reach limit (I7). Counting and storing are one step across replicas: both
// happen while this replica holds CreateLease, and the catalog write is
// fenced with the lease's epoch. A replica that stalled past the lease's
// lifetime while another took it over (and may have counted and created in
// between) has its write refused as stale, and counts again.
//
// The write is fenced by CreateLease, not by the scheduler lease: any
// replica takes requests, owner or not, so the scheduler's fence would
// refuse them on every other replica, and what must not interleave with
// this count is another replica's count, which only CreateLease orders.
// Updates of existing tasks stay unfenced revision compare-and-swaps: none
// of them turns a task that is not counted into one that is.
func (m *Manager) createWithinLimit(ctx context.Context, t *Task, limit int, now time.Time) error {
	// Acquire renews a lease its holder already holds, so the lease alone
	// does not order this replica's own requests: createMu does.
	m.createMu.Lock()
	defer m.createMu.Unlock()
	for range 3 {
		lease, err := m.takeCreateLease(ctx)
		if err != nil {
			return err
		}
		err = m.countAndCreate(ctx, store.Fence{Lease: lease.Name, Epoch: lease.Epoch}, t, limit, now)
		m.releaseCreateLease(ctx, lease)
		if errors.Is(err, store.ErrStaleEpoch) {
			continue // another replica took the lease over meanwhile: count again
		}
		return err
	}
	return busyErr()
}

func (m *Manager) countAndCreate(ctx context.Context, f store.Fence, t *Task, limit int, now time.Time) error {
	n, err := m.countLive(ctx)
	if err != nil {
		return err
	}
	if n >= limit {
		return userErr(ErrLimit, "herald has reached its task limit (%d); delete one first",
			"任务数量已达上限（%d 个）；请先删除一个任务。", n)
	}
	return m.create(ctx, f, t, now)
}

// takeCreateLease takes CreateLease, waiting while another replica holds it.
func (m *Manager) takeCreateLease(ctx context.Context) (store.Lease, error) {
	for i := 0; ; i++ {
		l, err := m.store.Leases().Acquire(ctx, CreateLease, m.o.Holder, createLeaseTTL)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, store.ErrLeaseHeld) {
			return store.Lease{}, fmt.Errorf("take the task-create lease: %w", err)
		}
		if i == len(createWaits) {
			return store.Lease{}, busyErr()
		}
		select {
		case <-ctx.Done():
			return store.Lease{}, ctx.Err()
		case <-m.clock.After(createWaits[i]):
		}
	}
}

// releaseCreateLease gives CreateLease up even when ctx has ended, so the
// next request need not wait for it to expire.
func (m *Manager) releaseCreateLease(ctx context.Context, l store.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := m.store.Leases().Release(rctx, l); err != nil {
		m.log.Warn().Err(err).Msg("cannot release the task-create lease; it expires on its own")
	}
}

func busyErr() error {
	return userErr(ErrBusy, "herald is busy with other new tasks; try again in a moment",
		"正在处理其他新任务，请稍后再试。")
}

// create stores t under a new id, with its write fenced by f.
func (m *Manager) create(ctx context.Context, f store.Fence, t *Task, now time.Time) error {
	for range 5 {
		id := randomID(3)
		t.ID, t.Request = "t-"+id, Request{ID: "r-" + id, By: t.Owner, At: now, Via: t.ReplyTo, Name: t.Request.Name}
		b, err := encodeTask(t)
		if err != nil {
			return err
		}
		rev, err := m.store.Catalog().Put(ctx, f, t.ID, 0, b)
		if errors.Is(err, store.ErrConflict) {
			continue // id taken: draw another
		}
		if err != nil {
			return fmt.Errorf("store task: %w", err)
		}
		t.Revision = rev
		return nil
	}
	return errors.New("could not allocate a task id")
}

func (m *Manager) approveInto(t *Task, by, basis string, auto bool, now time.Time) error {
	g, err := grantFor(t, by, basis)
	if err != nil {
		return err
	}
	g.At = now
	t.Grant = g
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
	title, text := t.say(noticeUnreachable, t.displayName(), reason)
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
