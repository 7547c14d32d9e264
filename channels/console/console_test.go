package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
	"github.com/herald-bridge/herald/webhook"
)

const token = "test-admin-token"

type emptySource struct{}

func (emptySource) Fetch(context.Context, watch.Conditional) (watch.Result, error) {
	return watch.Result{}, nil
}

type rig struct {
	t     *testing.T
	store *bolt.Store
	srv   *httptest.Server
}

// newRig mounts the console on a real admin API over a real manager and
// bbolt store, and runs the conversation core's follower.
func newRig(t *testing.T) *rig {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng, err := engine.New(engine.Options{Store: st, Log: zerolog.Nop(), Holder: "test",
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) { return emptySource{}, nil }),
		Policy:  tasks.Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*"}, Named: map[string]bool{}}})
	if err != nil {
		t.Fatal(err)
	}
	m := eng.Catalog
	core, err := conversation.New(conversation.Options{Tasks: m, Store: st, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	a := webhook.NewAdmin(token)
	Mount(a, core, st.Channels())
	mux := http.NewServeMux()
	mux.HandleFunc("/admin/v1/{op}", func(w http.ResponseWriter, r *http.Request) {
		if err := a.ServeHTTP(w, r); err != nil {
			var he *webhook.Error
			if !errors.As(err, &he) {
				he = &webhook.Error{Status: 500, Code: "internal", Msg: "internal"}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(he.Status)
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": map[string]string{"code": he.Code, "message": he.Msg}})
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = core.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &rig{t: t, store: st, srv: srv}
}

// call POSTs in to op; it returns the HTTP status and the envelope.
func (r *rig) call(op string, in any) (int, struct {
	OK     bool   `json:"ok"`
	Result Answer `json:"result"`
	Error  struct{ Code, Message string }
}) {
	r.t.Helper()
	var env struct {
		OK     bool   `json:"ok"`
		Result Answer `json:"result"`
		Error  struct{ Code, Message string }
	}
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/admin/v1/"+op, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		r.t.Fatal(err)
	}
	return resp.StatusCode, env
}

func (r *rig) send(as, text string) []Reply {
	r.t.Helper()
	code, env := r.call("chat.send", map[string]string{"as": as, "text": text})
	if code != http.StatusOK || !env.OK {
		r.t.Fatalf("chat.send: HTTP %d %+v", code, env.Error)
	}
	return env.Result.Replies
}

func (r *rig) poll(as string) []Reply {
	r.t.Helper()
	code, env := r.call("chat.poll", map[string]string{"as": as})
	if code != http.StatusOK || !env.OK {
		r.t.Fatalf("chat.poll: HTTP %d %+v", code, env.Error)
	}
	if env.Result.Replies == nil {
		r.t.Fatal("chat.poll: replies is null, want a list")
	}
	return env.Result.Replies
}

func waitPoll(t *testing.T, r *rig, as string) []Reply {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := r.poll(as); len(got) > 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing arrived for %s within 10s", as)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRequestApproveThroughTheAdminAPI(t *testing.T) {
	r := newRig(t)
	got := r.send("alice", "/watch https://example.org/feed.xml every 1h")
	if len(got) != 1 || !strings.Contains(got[0].Text, "awaits an admin's approval") {
		t.Fatalf("replies %+v", got)
	}
	rid := got[0].Text[strings.Index(got[0].Text, "r-"):][:8]

	prompt := waitPoll(t, r, "admin")
	if len(prompt) != 1 || len(prompt[0].Buttons) != 2 ||
		prompt[0].Buttons[0] != (Button{Label: "Approve", Action: "approve", Arg: rid}) {
		t.Fatalf("admin outbox %+v", prompt)
	}
	if again := r.poll("admin"); len(again) != 0 {
		t.Fatalf("outbox not drained: %+v", again)
	}
	got = r.send("admin", "/approve "+rid)
	if len(got) != 1 || !strings.Contains(got[0].Text, "Approved "+rid+" by console:admin") {
		t.Fatalf("approve replies %+v", got)
	}
	told := waitPoll(t, r, "alice")
	if len(told) != 1 || !strings.Contains(told[0].Text, "was approved by console:admin") {
		t.Fatalf("alice outbox %+v", told)
	}
}

func TestNamesAreValidated(t *testing.T) {
	r := newRig(t)
	for _, as := range []string{"", "../etc", "a b", "ünïcode", strings.Repeat("x", 33), "x:y"} {
		for _, op := range []string{"chat.send", "chat.poll"} {
			code, env := r.call(op, map[string]string{"as": as, "text": "/help"})
			if code != http.StatusBadRequest || env.Error.Code != "bad_request" {
				t.Errorf("%s as %q: HTTP %d %+v", op, as, code, env.Error)
			}
		}
	}
	for _, as := range []string{"a", "admin", "Alice-2_x.y", strings.Repeat("x", 32)} {
		if !ValidName(as) {
			t.Errorf("ValidName(%q) = false", as)
		}
	}
	code, _ := r.call("chat.send", map[string]string{"as": "alice", "text": strings.Repeat("x", MaxText+1)})
	if code != http.StatusBadRequest {
		t.Errorf("oversized text: HTTP %d", code)
	}
}

func TestOutboxIsBounded(t *testing.T) {
	r := newRig(t)
	ch := New(r.store.Channels())
	ctx := context.Background()
	for i := range OutboxCap + 5 {
		if err := ch.Say(ctx, "console:bob", conversation.Reply{Text: fmt.Sprintf("n%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	box, err := ch.Drain(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(box) != OutboxCap || box[0].Text != "n5" || box[len(box)-1].Text != fmt.Sprintf("n%d", OutboxCap+4) {
		t.Fatalf("outbox has %d, first %q", len(box), box[0].Text)
	}
	if box, _ := ch.Drain(ctx, "bob"); len(box) != 0 {
		t.Fatalf("drained outbox still has %d", len(box))
	}
	// A toast-only reply is shown as text; an empty one is not stored.
	_ = ch.Say(ctx, "console:bob", conversation.Reply{Toast: "Only an admin can approve requests."})
	_ = ch.Say(ctx, "console:bob", conversation.Reply{})
	if box, _ := ch.Drain(ctx, "bob"); len(box) != 1 || box[0].Text != "Only an admin can approve requests." {
		t.Fatalf("outbox %+v", box)
	}
}

func TestSayRefusesOtherAddresses(t *testing.T) {
	r := newRig(t)
	ch := New(r.store.Channels())
	for _, chat := range []string{"telegram:chat:1", "console:", "console:a/b"} {
		if err := ch.Say(context.Background(), chat, conversation.Reply{Text: "x"}); err == nil {
			t.Errorf("Say(%q) accepted", chat)
		}
	}
}

// TestReconnectingAdminIsPromptedOnlyForPendingRequests: prompts that
// waited in the outbox for requests decided meanwhile (here by the admin
// typing /approve before reading them) are not shown; one still pending is.
func TestReconnectingAdminIsPromptedOnlyForPendingRequests(t *testing.T) {
	r := newRig(t)
	var ids []string
	for _, u := range []string{"https://example.org/a.xml", "https://example.org/b.xml"} {
		got := r.send("alice", "/watch "+u+" every 1h")
		i := strings.Index(got[0].Text, "r-")
		if i < 0 {
			t.Fatalf("no request id in %q", got[0].Text)
		}
		ids = append(ids, got[0].Text[i:i+8])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := r.store.Channels().Get(context.Background(), outboxKey("admin"))
		if strings.Count(string(b), `"request"`) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prompts did not reach the outbox: %s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := r.send("admin", "/approve "+ids[0]); !strings.Contains(got[0].Text, "Approved") {
		t.Fatalf("approve: %+v", got)
	}
	box := r.poll("admin")
	text := fmt.Sprint(box)
	if strings.Contains(text, "Request "+ids[0]) {
		t.Errorf("the admin is prompted for %s, already approved:\n%s", ids[0], text)
	}
	if !strings.Contains(text, "Request "+ids[1]) {
		t.Errorf("the prompt for pending %s is gone:\n%s", ids[1], text)
	}
}
