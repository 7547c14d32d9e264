package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	hook "github.com/herald-bridge/herald/webhook"
)

// consoleAdmin is the principal the CLI acts as: the machine's operator,
// who holds the data dir's access record.
const consoleAdmin = ""

// mountAdmin registers every CLI operation on the admin API: one method
// of adminOps each, named in one table.
func (s *service) mountAdmin(token string, coord *configs.Coordinator) {
	a := hook.NewAdmin(token)
	o := &adminOps{s: s, m: s.manager, coord: coord, shutdown: newShutdownWatch()}
	for _, op := range []struct {
		name string
		do   hook.AdminOp
	}{
		{"status", o.status},
		{"reload", o.reload},
		{"tasks.list", withInput(o.listTasks)},
		{"tasks.show", withInput(o.showTask)},
		{"tasks.pause", withInput(o.act((*tasks.Manager).Pause))},
		{"tasks.resume", withInput(o.act((*tasks.Manager).Resume))},
		{"tasks.delete", withInput(o.act((*tasks.Manager).Delete))},
		{"tasks.rebaseline", withInput(o.act((*tasks.Manager).Rebaseline))},
		{"tasks.run", withInput(o.runTask)},
		{"requests.list", o.listRequests},
		{"requests.approve", withInput(o.act((*tasks.Manager).Approve))},
		{"requests.reject", withInput(o.reject)},
		{"ledger.show", withInput(o.showLedger)},
		{"ledger.redeliver", withInput(o.redeliver)},
		{"ledger.redeliver_range", withInput(o.redeliverRange)},
		{"recipients.list", withInput(o.listRecipients)},
		{"recipients.enable", withInput(o.enableRecipient)},
		{"inbox.list", withInput(o.listInbox)},
		{"inbox.read", withInput(o.readInbox)},
		{"inbox.token", withInput(o.inboxToken)},
		{"template.preview", withInput(o.previewTemplate)},
		{"send-test", withInput(o.sendTest)},
		{"send-test.follow", withInput(o.followTest)},
		{"history.search", withInput(o.searchHistory)},
		{"history.list", withInput(o.listHistory)},
		{"export", withInput(o.exportTasks)},
		{"import", withInput(o.importTasks)},
		{"backup", withInput(o.backup)},
		{"downloads.list", withInput(o.listDownloads)},
		{"doctor", o.doctor},
	} {
		a.Register(op.name, op.do)
	}
	s.channels.mountAdmin(a)
	s.mountConsoleAdmin(a)
	s.mountAgents(a)
	s.server.Handle("/admin/v1/{op}", a.ServeHTTP)
}

// adminOps are the CLI's operations on a running service.
type adminOps struct {
	s        *service
	m        *tasks.Manager
	coord    *configs.Coordinator
	shutdown *shutdownWatch
}

// withInput adapts an operation taking its decoded request body.
func withInput[In any](op func(context.Context, In) (any, error)) hook.AdminOp {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, hook.BadInput("request body does not have the expected fields")
		}
		return op(ctx, in)
	}
}

// idIn is the body of an operation on one task or request.
type idIn struct {
	ID     string `json:"id"`
	NoWait bool   `json:"no_wait"`
	Reason string `json:"reason"`
}

func (o *adminOps) status(ctx context.Context, _ json.RawMessage) (any, error) {
	s := o.s
	owner, epoch := o.s.engine.Scheduler.Owner()
	count, _ := o.m.Count(ctx)
	s.mu.Lock()
	driver := s.cfg.Store.Driver
	s.mu.Unlock()
	st := statusView{Version: version, Holder: s.holder, Owner: owner, Epoch: epoch, Store: driver,
		StoreOK: s.store.Ping(ctx) == nil, Channels: s.channels.status(), Tasks: count, Listen: s.server.Addr()}
	shards := o.s.engine.Scheduler.Shards()
	st.Shards = &shards
	cond := o.s.metrics.conditional()
	st.Conditional = &cond
	return st, nil
}

func (o *adminOps) reload(context.Context, json.RawMessage) (any, error) {
	if err := o.coord.Reload(); err != nil {
		return nil, hook.BadInput(err.Error())
	}
	return map[string]bool{"reloaded": true}, nil
}

// pageIn asks for one page of a listing: at most Limit (0: the most one
// page holds) after the id After.
type pageIn struct {
	Limit int    `json:"limit"`
	After string `json:"after"`
}

// listTasks answers one page of tasks in id order; the next page starts
// after the last id of this one.
func (o *adminOps) listTasks(ctx context.Context, in pageIn) (any, error) {
	list, _, err := o.m.ListPage(ctx, in.After, in.Limit)
	if err != nil {
		return nil, err
	}
	return viewsOf(list, func(t *tasks.Task) taskView {
		v := viewTask(t)
		if n := o.m.Next(t); !n.At.IsZero() { // a host's hold included (SPEC §18)
			at := n.At.UTC()
			v.NextRun = &at
		}
		return v
	}), nil
}

// listRequests lists the requests waiting for an admin, oldest first.
func (o *adminOps) listRequests(ctx context.Context, _ json.RawMessage) (any, error) {
	var out []requestView
	err := eachTask(ctx, o.m, func(t *tasks.Task) {
		if t.State == tasks.PendingApproval {
			out = append(out, viewRequest(t))
		}
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	if out == nil {
		out = []requestView{}
	}
	return out, nil
}

// eachTask calls fn with every live task, a page of the catalog at a time.
func eachTask(ctx context.Context, m *tasks.Manager, fn func(*tasks.Task)) error {
	for after := ""; ; {
		page, next, err := m.ListPage(ctx, after, tasks.MaxPage)
		if err != nil {
			return err
		}
		for _, t := range page {
			fn(t)
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// viewsOf renders each of list with view.
func viewsOf[T, V any](list []T, view func(T) V) []V {
	out := make([]V, 0, len(list))
	for _, x := range list {
		out = append(out, view(x))
	}
	return out
}

func (o *adminOps) showTask(ctx context.Context, in idIn) (any, error) {
	t, err := o.m.Get(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	runs, _ := o.m.Runs(ctx, t.ID, 0)
	d := taskDetail{taskView: viewTask(t), Request: t.Request, Decision: t.Decision, Grant: t.Grant, Source: t.Source.URL,
		Kind: t.Source.Kind, Notify: t.Notify, Unreachable: t.Unreachable, Failures: t.Failures, Runs: runs}
	if n := o.m.Next(t); !n.At.IsZero() {
		d.Next = &n
	}
	return d, nil
}

// act is an operation that changes one task as the console admin and
// answers with the task as it now is.
func (o *adminOps) act(change func(m *tasks.Manager, ctx context.Context, who, id string) (*tasks.Task, error)) func(context.Context, idIn) (any, error) {
	return func(ctx context.Context, in idIn) (any, error) {
		t, err := change(o.m, ctx, consoleAdmin, in.ID)
		if err != nil {
			return nil, err
		}
		return viewTask(t), nil
	}
}

func (o *adminOps) reject(ctx context.Context, in idIn) (any, error) {
	t, err := o.m.Reject(ctx, consoleAdmin, in.ID, in.Reason)
	if err != nil {
		return nil, err
	}
	return viewTask(t), nil
}

func (o *adminOps) runTask(ctx context.Context, in idIn) (any, error) {
	if in.NoWait {
		go func() {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			_, _ = o.m.RunNow(rctx, consoleAdmin, in.ID)
		}()
		return tasks.RunRecord{TaskID: in.ID, Start: time.Now().UTC(), Outcome: "started"}, nil
	}
	stopping := o.shutdown.from(ctx)
	ctx, cancel := untilStopping(ctx, stopping)
	defer cancel()
	rec, err := o.m.RunNow(ctx, consoleAdmin, in.ID)
	if err != nil && isClosed(stopping) {
		return nil, errStopping("the check was cancelled")
	}
	return rec, err
}

type ledgerIn struct {
	Task  string `json:"task"`
	Limit int    `json:"limit"`
}

func (o *adminOps) showLedger(ctx context.Context, in ledgerIn) (any, error) {
	source, known := o.s.ledgerSource(ctx, in.Task)
	fxs, err := o.m.Effects(ctx, source, in.Limit)
	if err != nil {
		return nil, err
	}
	if len(fxs) == 0 && !known {
		return nil, &hook.Error{Status: http.StatusNotFound, Code: "not_found", Msg: "no task, request or inbound hook named " + in.Task}
	}
	return viewsOf(fxs, viewEffect), nil
}

type redeliverIn struct {
	Key string `json:"key"`
}

func (o *adminOps) redeliver(ctx context.Context, in redeliverIn) (any, error) {
	fx, err := o.m.Redeliver(ctx, "console:admin", in.Key)
	if err != nil {
		return nil, err
	}
	return viewEffect(fx), nil
}

type inboxListIn struct {
	Principal string `json:"principal"`
	Unread    bool   `json:"unread"`
	Before    string `json:"before"`
}

func (o *adminOps) listInbox(ctx context.Context, in inboxListIn) (any, error) {
	s := o.s
	items, err := s.store.Inbox().List(ctx, in.Principal, store.InboxQuery{Before: in.Before, Limit: 100, UnreadOnly: in.Unread})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	lang, zone := s.cfg.Language, s.cfg.Location
	s.mu.Unlock()
	return viewsOf(items, func(it store.InboxItem) inboxView { return viewInbox(it, lang, zone) }), nil
}

func (o *adminOps) readInbox(ctx context.Context, in struct{ Principal, ID string }) (any, error) {
	n, err := o.s.store.Inbox().MarkRead(ctx, in.Principal, fullInboxID(in.ID)) // "7" is item 0000000000000007
	if err != nil {
		return nil, err
	}
	return map[string]int{"marked": n}, nil
}

func (o *adminOps) inboxToken(ctx context.Context, in struct{ Principal string }) (any, error) {
	if !delivery.ValidPrincipal(in.Principal) {
		return nil, hook.BadInput("a principal looks like " + address.Forms())
	}
	tok, err := hook.InboxTokens{KV: o.s.store.Channels()}.Issue(ctx, in.Principal)
	if err != nil {
		return nil, err
	}
	out := map[string]string{"token": tok}
	o.s.mu.Lock()
	public := o.s.cfg.Server.PublicURL
	o.s.mu.Unlock()
	if public != "" {
		out["url"] = strings.TrimRight(public, "/") + "/api/v1/inbox"
	}
	return out, nil
}

func (o *adminOps) sendTest(ctx context.Context, in struct{ Recipient string }) (any, error) {
	stopping := o.shutdown.from(ctx)
	ctx, cancel := untilStopping(ctx, stopping)
	defer cancel()
	v, err := o.s.sendTest(ctx, in.Recipient)
	if isClosed(stopping) && (err != nil || v.Reason == "no_answer_yet" || v.Reason == "not_started") {
		return nil, errStopping("the test push was claimed; its outcome will be in the ledger")
	}
	return v, err
}

// sendTestWait bounds how long send-test waits for the sink's answer. A
// sink that has not answered by then is reported as such; the push stays
// claimed and its outcome lands in the ledger.
const sendTestWait = 15 * time.Second

// sendTest sends one test push through the whole path — claim, queue,
// sink, outcome — and reports the first answer the sink gives, within
// sendTestWait. The push is one effect like any other: a push refused as
// provably not sent stays queued and is tried again until it expires; an
// unknown one is not sent again unless the receiver drops repeats.
func (s *service) sendTest(ctx context.Context, recipient string) (sendTestView, error) {
	route, err := s.table.Resolve(recipient)
	if err != nil {
		return sendTestView{}, hook.BadInput(fmt.Sprintf("cannot send to %s: %v", recipient, err))
	}
	id := "test-" + time.Now().UTC().Format("20060102T150405.000000000")
	res, err := s.engine.Admitter.Admit(ctx, delivery.Admission{
		Source: "test", Identity: id, Recipients: []string{recipient}, TTL: 10 * time.Minute,
		Message: delivery.Message{Kind: delivery.KindTest, Title: "herald test push", Text: "This is a test push from herald. If you can read it, delivery works."},
	})
	if err != nil {
		return sendTestView{}, err
	}
	if len(res.Claimed) != 1 {
		return sendTestView{}, errors.New("the test push was not claimed")
	}
	return s.awaitTestOutcome(ctx, res.Claimed[0], recipient, route.Dedups, 0)
}

// awaitTestOutcome waits, within sendTestWait, for the sink's answer to
// a test push's attempt after the first `after` ones (or for the push to
// end), and reports it; past the bound it reports where the push stands.
func (s *service) awaitTestOutcome(ctx context.Context, key, recipient string, dedups bool, after int) (sendTestView, error) {
	start := time.Now()
	bound := time.NewTimer(sendTestWait)
	defer bound.Stop()
	for {
		fx, err := s.store.Ledger().Get(ctx, key)
		if err != nil {
			return sendTestView{}, err
		}
		v, answered := testOutcome(fx, dedups, time.Now())
		v.Recipient, v.Elapsed = recipient, time.Since(start).Round(time.Millisecond).Seconds()
		if answered && (v.Attempts > after || fx.State != store.Pending) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-bound.C:
			return v, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// followTest reports the next answer to a test push claimed by send-test:
// the attempt after the first `attempts`, as it comes (within
// sendTestWait; the CLI asks again).
func (o *adminOps) followTest(ctx context.Context, in struct {
	Effect    string `json:"effect"`
	Recipient string `json:"recipient"`
	Attempts  int    `json:"attempts"`
}) (any, error) {
	if fx, err := o.s.store.Ledger().Get(ctx, in.Effect); err != nil || fx.TaskID != "test" || fx.Recipient != in.Recipient {
		return nil, hook.BadInput("send-test.follow follows a test push to its recipient only")
	}
	route, err := o.s.table.Resolve(in.Recipient)
	if err != nil {
		return nil, hook.BadInput(fmt.Sprintf("cannot send to %s: %v", in.Recipient, err))
	}
	stopping := o.shutdown.from(ctx)
	ctx, cancel := untilStopping(ctx, stopping)
	defer cancel()
	return o.s.awaitTestOutcome(ctx, in.Effect, in.Recipient, route.Dedups, in.Attempts)
}

// notSentReasons are the reasons a sink gives for an attempt it knows
// was not sent (RetryAfter). The ledger keeps a retried push pending
// under its reason whether it was refused unsent or its outcome is
// unknown and the receiver drops repeats; for a receiver that drops
// repeats only these reasons tell the two apart.
var notSentReasons = map[string]bool{
	delivery.ReasonDNS: true, delivery.ReasonConnectFailed: true, delivery.ReasonCanceled: true,
	"rate_limited": true, "paced": true, "store_unavailable": true, "token_unavailable": true, "token_invalid": true,
}

// testOutcome reads a test push's effect as the class of the sink's
// answer, and whether the sink has answered yet. Before an answer it is
// the class a caller who stops waiting must assume: unknown while an
// attempt is in flight (it may arrive), pending while none began.
func testOutcome(fx store.Effect, dedups bool, now time.Time) (sendTestView, bool) {
	v := sendTestView{Effect: fx.Key, State: string(fx.State), Attempts: len(fx.Attempts), Error: fx.Error, Reason: fx.Error, ProviderID: fx.ProviderID}
	switch fx.State {
	case store.Completed, store.Failed, store.Unknown:
		v.Outcome = string(fx.State)
		return v, true
	}
	ended := len(fx.Attempts) > 0 && !fx.Attempts[len(fx.Attempts)-1].End.IsZero()
	switch {
	case fx.InFlight, ended && fx.Error == "":
		// Sending, or between the parts of a split message.
		v.Outcome, v.Reason = string(store.Unknown), "no_answer_yet"
		return v, false
	case !ended:
		v.Outcome, v.Reason = string(store.Pending), "not_started"
		return v, false
	case dedups && !notSentReasons[fx.Error]:
		// Unknown, sent again under the same key, which the receiver drops.
		v.Outcome = string(store.Unknown)
	default:
		v.Outcome = "retry_after"
	}
	if wait := fx.NotBefore.Sub(now); wait > 0 {
		v.RetryIn = wait.Round(time.Second).Seconds()
	}
	return v, true
}

// ledgerSource maps what the operator typed for `ledger show` to the
// ledger's source id: a task id or request id as is, an inbound hook's
// name to its "hook:<name>" source. known reports whether name is a task,
// a request, an inbound hook or a source id written as one ("hook:ci").
func (s *service) ledgerSource(ctx context.Context, name string) (source string, known bool) {
	if strings.Contains(name, ":") || name == delivery.DigestSource {
		return name, true
	}
	if _, err := s.manager.Get(ctx, name); err == nil {
		return name, true
	}
	s.mu.Lock()
	_, isHook := s.cfg.Inbound[name]
	s.mu.Unlock()
	if isHook {
		return "hook:" + name, true
	}
	return name, false
}

// viewInbox renders an inbox item the way a chat would show it: a change
// notice carries items, not a title or text of its own.
func viewInbox(it store.InboxItem, lang string, zone *time.Location) inboxView {
	v := inboxView{ID: it.ID, Title: it.Title, CreatedAt: it.CreatedAt, Read: it.Read}
	var msg delivery.Message
	if err := json.Unmarshal(it.Body, &msg); err != nil {
		return v
	}
	if v.Title == "" {
		v.Title = render.Title(msg, lang, it.CreatedAt)
	}
	v.Text = msg.Text
	if len(msg.Items) > 0 {
		v.Text = render.Text(msg, lang, zone, it.CreatedAt)
	}
	return v
}

// shutdownWatch closes done when the HTTP server that serves the admin API
// begins its graceful shutdown. The admin API's long waits — a check run to
// its end, a test push to its outcome — end then, so the drain does not
// wait on them; the work itself settles as any cancelled run does (I9).
type shutdownWatch struct {
	once sync.Once
	done chan struct{}
}

func newShutdownWatch() *shutdownWatch { return &shutdownWatch{done: make(chan struct{})} }

// from registers with the server of the request ctx belongs to (once) and
// returns the channel closed at its shutdown.
func (w *shutdownWatch) from(ctx context.Context) <-chan struct{} {
	w.once.Do(func() {
		if srv, ok := ctx.Value(http.ServerContextKey).(*http.Server); ok {
			srv.RegisterOnShutdown(func() { close(w.done) })
		}
	})
	return w.done
}

// untilStopping derives a context from ctx that also ends when stopping closes.
func untilStopping(ctx context.Context, stopping <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// errStopping answers a wait the shutdown ended.
func errStopping(what string) error {
	return &hook.Error{Status: http.StatusServiceUnavailable, Code: "shutting_down", Msg: "the service is shutting down; " + what}
}
