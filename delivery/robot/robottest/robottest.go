// Package robottest holds what the tests of the group-robot sinks share:
// a fake robot speaking the platforms' wire format on 127.0.0.1, and a
// dispatcher over a real store that delivers to one named robot.
package robottest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
)

// Request is one request a fake robot received.
type Request struct {
	Query url.Values
	Body  map[string]any
	Raw   []byte
	At    time.Time
}

// Answer is how a fake robot answers one request: an errcode in an HTTP
// 200 JSON body, or Drop to read the request and close the connection
// without answering.
type Answer struct {
	Code int
	Drop bool
}

// Robot is a fake group robot.
type Robot struct {
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	got    []Request
	answer func(n int, r Request) Answer
}

// NewRobot starts a robot answering each request (n counts from 0) with
// answer(n, r); nil answers errcode 0 to everything.
func NewRobot(t testing.TB, answer func(n int, r Request) Answer) *Robot {
	t.Helper()
	rb := &Robot{t: t, answer: answer}
	rb.Server = httptest.NewServer(http.HandlerFunc(rb.serve))
	t.Cleanup(rb.Close)
	return rb
}

func (rb *Robot) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Query: r.URL.Query(), Raw: raw, At: time.Now()}
	if err := json.Unmarshal(raw, &req.Body); err != nil || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"errcode":40001,"errmsg":"bad request"}`)
		return
	}
	rb.mu.Lock()
	n := len(rb.got)
	rb.got = append(rb.got, req)
	answer := rb.answer
	rb.mu.Unlock()
	a := Answer{}
	if answer != nil {
		a = answer(n, req)
	}
	if a.Drop {
		hj, ok := w.(http.Hijacker)
		if !ok {
			rb.t.Error("cannot hijack the connection")
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	msg := "ok"
	if a.Code != 0 {
		msg = "refused"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"errcode": a.Code, "errmsg": msg})
}

// NewRobotAt starts the robot of NewRobot listening on addr: a robot
// that comes up where a sink was refused before.
func NewRobotAt(t testing.TB, addr string, answer func(n int, r Request) Answer) *Robot {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	rb := &Robot{t: t, answer: answer}
	rb.Server = httptest.NewUnstartedServer(http.HandlerFunc(rb.serve))
	_ = rb.Server.Listener.Close()
	rb.Server.Listener = l
	rb.Server.Start()
	t.Cleanup(rb.Close)
	return rb
}

// Requests returns what the robot received so far.
func (rb *Robot) Requests() []Request {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return append([]Request(nil), rb.got...)
}

// Rig is a dispatcher over a real bbolt store with a manual clock,
// delivering every push to one named recipient.
type Rig struct {
	t     testing.TB
	Clock *tasks.ManualClock
	Store *bolt.Store
	route delivery.Route
	d     *delivery.Dispatcher
	seq   int
}

// NewRig opens a store; Start runs the dispatcher.
func NewRig(t testing.TB, at time.Time) *Rig {
	t.Helper()
	clock := tasks.NewManualClock(at)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &Rig{t: t, Clock: clock, Store: st}
}

// Start runs a dispatcher sending to sink as the named recipient name of
// kind, until the test ends.
func (r *Rig) Start(name string, kind delivery.AddressKind, sink delivery.Sink, opt func(*delivery.Options)) {
	r.t.Helper()
	r.route = delivery.Route{Sink: sink, To: delivery.Address{Kind: kind, Name: name}, Lang: "en", Zone: time.UTC}
	o := delivery.Options{Ledger: r.Store.Ledger(), Router: r, Worker: "w", Workers: 2,
		Now: r.Clock.Now, Poll: 5 * time.Millisecond, Log: zerolog.Nop()}
	if opt != nil {
		opt(&o)
	}
	d, err := delivery.NewDispatcher(o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	r.t.Cleanup(func() { cancel(); <-done })
}

// Resolve implements delivery.Router: every recipient is the robot.
func (r *Rig) Resolve(string) (delivery.Route, error) { return r.route, nil }

// Queue claims one push of msg to the robot and returns its key.
func (r *Rig) Queue(msg delivery.Message) string {
	r.t.Helper()
	r.seq++
	payload, err := json.Marshal(msg)
	if err != nil {
		r.t.Fatal(err)
	}
	key := "fx_robot_" + string(rune('a'+r.seq))
	_, err = r.Store.Ledger().Commit(context.Background(), store.RunCommit{TaskID: "hook:ci", Effects: []store.Effect{{
		Key: key, TaskID: "hook:ci", Recipient: r.route.To.Name, Kind: msg.Kind, Payload: payload,
		NotBefore: r.Clock.Now(), ExpiresAt: r.Clock.Now().Add(time.Hour),
	}}})
	if err != nil {
		r.t.Fatal(err)
	}
	if r.d != nil {
		r.d.Wake()
	}
	return key
}

// Effect reads key from the ledger.
func (r *Rig) Effect(key string) store.Effect {
	r.t.Helper()
	fx, err := r.Store.Ledger().Get(context.Background(), key)
	if err != nil {
		r.t.Fatal(err)
	}
	return fx
}

// Wait polls until cond holds, failing after a few seconds.
func Wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Settled waits until key ends in state (or, for Pending, is queued again
// after an attempt) and returns it.
func (r *Rig) Settled(key string, state store.EffectState) store.Effect {
	r.t.Helper()
	var fx store.Effect
	Wait(r.t, "effect "+string(state), func() bool {
		fx = r.Effect(key)
		if state == store.Pending {
			return fx.State == store.Pending && !fx.InFlight && len(fx.Attempts) > 0
		}
		return fx.State == state
	})
	return fx
}
