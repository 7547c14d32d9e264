package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	hook "github.com/herald-bridge/herald/webhook"
)

// consoleAdmin is the principal the CLI acts as: the machine's operator,
// who holds the data dir's access record.
const consoleAdmin = ""

// mountAdmin registers every CLI operation on the admin API.
func (s *service) mountAdmin(token string, coord *configs.Coordinator) {
	a := hook.NewAdmin(token)
	m := s.manager
	shutdown := newShutdownWatch()
	type idIn struct {
		ID     string `json:"id"`
		NoWait bool   `json:"no_wait"`
		Reason string `json:"reason"`
	}
	decode := func(raw json.RawMessage, v any) error {
		if err := json.Unmarshal(raw, v); err != nil {
			return hook.BadInput("request body does not have the expected fields")
		}
		return nil
	}
	a.Register("status", func(ctx context.Context, _ json.RawMessage) (any, error) {
		owner, epoch := m.Owner()
		list, _ := m.List(ctx, consoleAdmin)
		s.mu.Lock()
		driver := s.cfg.Store.Driver
		s.mu.Unlock()
		st := statusView{Version: version, Holder: s.holder, Owner: owner, Epoch: epoch, Store: driver,
			StoreOK: s.store.Ping(ctx) == nil, Channels: s.channels.status(), Tasks: len(list), Listen: s.server.Addr()}
		return st, nil
	})
	a.Register("reload", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if err := coord.Reload(); err != nil {
			return nil, hook.BadInput(err.Error())
		}
		return map[string]bool{"reloaded": true}, nil
	})
	a.Register("tasks.list", func(ctx context.Context, _ json.RawMessage) (any, error) {
		list, err := m.List(ctx, consoleAdmin)
		if err != nil {
			return nil, err
		}
		out := make([]taskView, 0, len(list))
		for _, t := range list {
			out = append(out, viewTask(t))
		}
		return out, nil
	})
	a.Register("tasks.show", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in idIn
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		t, err := m.Get(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		runs, _ := m.Runs(ctx, t.ID, 0)
		return taskDetail{taskView: viewTask(t), Request: t.Request, Decision: t.Decision, Grant: t.Grant, Source: t.Source.URL,
			Kind: t.Source.Kind, Notify: t.Notify, Unreachable: t.Unreachable, Failures: t.Failures, Runs: runs}, nil
	})
	for _, op := range []string{"pause", "resume", "delete", "rebaseline"} {
		a.Register("tasks."+op, func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in idIn
			if err := decode(raw, &in); err != nil {
				return nil, err
			}
			var t *tasks.Task
			var err error
			switch op {
			case "pause":
				t, err = m.Pause(ctx, consoleAdmin, in.ID)
			case "resume":
				t, err = m.Resume(ctx, consoleAdmin, in.ID)
			case "delete":
				t, err = m.Delete(ctx, consoleAdmin, in.ID)
			default:
				t, err = m.Rebaseline(ctx, consoleAdmin, in.ID)
			}
			if err != nil {
				return nil, err
			}
			return viewTask(t), nil
		})
	}
	a.Register("tasks.run", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in idIn
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		if in.NoWait {
			go func() {
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				_, _ = m.RunNow(rctx, consoleAdmin, in.ID)
			}()
			return tasks.RunRecord{TaskID: in.ID, Start: time.Now().UTC(), Outcome: "started"}, nil
		}
		stopping := shutdown.from(ctx)
		ctx, cancel := untilStopping(ctx, stopping)
		defer cancel()
		rec, err := m.RunNow(ctx, consoleAdmin, in.ID)
		if err != nil && isClosed(stopping) {
			return nil, errStopping("the check was cancelled")
		}
		return rec, err
	})
	a.Register("requests.approve", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in idIn
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		t, err := m.Approve(ctx, consoleAdmin, in.ID)
		if err != nil {
			return nil, err
		}
		return viewTask(t), nil
	})
	a.Register("requests.reject", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in idIn
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		t, err := m.Reject(ctx, consoleAdmin, in.ID, in.Reason)
		if err != nil {
			return nil, err
		}
		return viewTask(t), nil
	})
	a.Register("ledger.show", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct {
			Task  string `json:"task"`
			Limit int    `json:"limit"`
		}
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		fxs, err := m.Effects(ctx, s.ledgerSource(ctx, in.Task), in.Limit)
		if err != nil {
			return nil, err
		}
		out := make([]effectView, 0, len(fxs))
		for _, fx := range fxs {
			out = append(out, viewEffect(fx))
		}
		return out, nil
	})
	a.Register("ledger.redeliver", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct {
			Key string `json:"key"`
		}
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		fx, err := m.Redeliver(ctx, "console:admin", in.Key)
		if err != nil {
			return nil, err
		}
		return viewEffect(fx), nil
	})
	a.Register("inbox.list", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct {
			Principal string `json:"principal"`
			Unread    bool   `json:"unread"`
			Before    string `json:"before"`
		}
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		items, err := s.store.Inbox().List(ctx, in.Principal, store.InboxQuery{Before: in.Before, Limit: 100, UnreadOnly: in.Unread})
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		lang, zone := s.cfg.Language, s.cfg.Location
		s.mu.Unlock()
		out := make([]inboxView, 0, len(items))
		for _, it := range items {
			out = append(out, viewInbox(it, lang, zone))
		}
		return out, nil
	})
	a.Register("inbox.read", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct{ Principal, ID string }
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		n, err := s.store.Inbox().MarkRead(ctx, in.Principal, in.ID)
		if err != nil {
			return nil, err
		}
		return map[string]int{"marked": n}, nil
	})
	a.Register("inbox.token", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct{ Principal string }
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		if !delivery.ValidPrincipal(in.Principal) {
			return nil, hook.BadInput("a principal looks like telegram:<id>, feishu:<open_id> or console:<name>")
		}
		tok, err := hook.InboxTokens{KV: s.store.Channels()}.Issue(ctx, in.Principal)
		if err != nil {
			return nil, err
		}
		return map[string]string{"token": tok}, nil
	})
	a.Register("send-test", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct{ Recipient string }
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		stopping := shutdown.from(ctx)
		ctx, cancel := untilStopping(ctx, stopping)
		defer cancel()
		v, err := s.sendTest(ctx, in.Recipient)
		settled := v.State == string(store.Completed) || v.State == string(store.Failed) || v.State == string(store.Unknown)
		if isClosed(stopping) && (err != nil || !settled) {
			return nil, errStopping("the test push was claimed; its outcome will be in the ledger")
		}
		return v, err
	})
	s.channels.mountAdmin(a)
	s.server.Handle("/admin/v1/{op}", a.ServeHTTP)
}

// sendTest sends one test push through the whole path — claim, queue,
// sink, outcome — and waits for its outcome.
func (s *service) sendTest(ctx context.Context, recipient string) (sendTestView, error) {
	if _, err := s.table.Resolve(recipient); err != nil {
		return sendTestView{}, hook.BadInput(fmt.Sprintf("cannot send to %s: %v", recipient, err))
	}
	id := "test-" + time.Now().UTC().Format("20060102T150405.000000000")
	res, err := s.manager.Admit(ctx, tasks.Admission{
		Source: "test", Identity: id, Recipients: []string{recipient}, TTL: 10 * time.Minute,
		Message: delivery.Message{Kind: delivery.KindTest, Title: "herald test push", Text: "This is a test push from herald. If you can read it, delivery works."},
	})
	if err != nil {
		return sendTestView{}, err
	}
	if len(res.Claimed) != 1 {
		return sendTestView{}, errors.New("the test push was not claimed")
	}
	key := res.Claimed[0]
	for {
		fx, err := s.store.Ledger().Get(ctx, key)
		if err != nil {
			return sendTestView{}, err
		}
		v := sendTestView{Effect: key, Recipient: recipient, State: string(fx.State), Attempts: len(fx.Attempts), Error: fx.Error, ProviderID: fx.ProviderID}
		if fx.State != store.Pending {
			return v, nil
		}
		if !fx.InFlight && fx.Error != "" && len(fx.Attempts) > 0 {
			v.State = "waiting (" + fx.Error + ")"
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ledgerSource maps what the operator typed for `ledger show` to the
// ledger's source id: a task id or request id as is, an inbound hook's
// name to its "hook:<name>" source.
func (s *service) ledgerSource(ctx context.Context, name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	if _, err := s.manager.Get(ctx, name); err == nil {
		return name
	}
	s.mu.Lock()
	_, isHook := s.cfg.Inbound[name]
	s.mu.Unlock()
	if isHook {
		return "hook:" + name
	}
	return name
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
