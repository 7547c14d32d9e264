package conversation

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
	"github.com/herald-bridge/herald/webhook"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// Principals used across the tests.
const (
	admin = "telegram:1"  // admin, private chat telegram:chat:1
	alice = "telegram:21" // requester
	bob   = "telegram:22" // another requester
	carol = "console:carol"
)

// feedSource is a source whose items and error the test sets.
type feedSource struct {
	mu    sync.Mutex
	items []watch.Item
	err   error
}

func (s *feedSource) Fetch(context.Context, watch.Conditional) (watch.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return watch.Result{}, s.err
	}
	return watch.Result{Items: s.items}, nil
}

func (s *feedSource) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

var _ tasks.Source = (*feedSource)(nil)

// said is one message the core started through a Sender.
type said struct {
	Chat  string
	Reply Reply
}

// recordingSender is a channel that records what the core starts.
type recordingSender struct {
	mu   sync.Mutex
	msgs []said
}

func (s *recordingSender) Say(_ context.Context, chat string, r Reply) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, said{chat, r})
	s.mu.Unlock()
	return nil
}

func (s *recordingSender) to(chat string) []Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Reply
	for _, m := range s.msgs {
		if m.Chat == chat {
			out = append(out, m.Reply)
		}
	}
	return out
}

var (
	_ Sender      = (*recordingSender)(nil)
	_ TokenIssuer = webhook.InboxTokens{}
)

type rig struct {
	t     testing.TB
	store *bolt.Store
	clock *tasks.ManualClock
	src   *feedSource
	m     *tasks.Manager
	eng   *engine.Engine
	core  *Core
	out   *recordingSender
	seq   int
}

func defaultPolicy() tasks.Policy {
	return tasks.Policy{
		Admins:       []string{admin, "console:admin"},
		Requesters:   []string{"telegram:*", "console:*"},
		AllowedHosts: []string{"*.example.edu"},
		AutoApprove:  []tasks.AutoApprove{{Principals: []string{bob}, Hosts: []string{"news.example.edu"}}},
		Named:        map[string]bool{},
	}
}

func newRig(t testing.TB, p tasks.Policy) *rig {
	t.Helper()
	r := &rig{t: t, clock: tasks.NewManualClock(t0), src: &feedSource{}, out: &recordingSender{}}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	eng, err := engine.New(engine.Options{
		Store: st, Clock: r.clock, Holder: "test", Log: zerolog.Nop(), Policy: p,
		RetryWaits: []time.Duration{0, 0},
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			return r.src, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.m, r.eng = eng.Catalog, eng
	r.core, err = New(Options{
		Tasks: r.m, Store: st, Tokens: webhook.InboxTokens{KV: st.Channels()},
		Zone: time.UTC, BotName: "herald_bot", Log: zerolog.Nop(), Now: r.clock.Now,
		// Tests of other things talk fast on a stopped clock; the chat
		// rate limit has tests of its own.
		ChatPerMinute: 6000, ChatBurst: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"telegram", "feishu", "console"} {
		r.core.AddSender(ch, r.out)
	}
	return r
}

// msg is a private-chat message from principal.
func (r *rig) msg(principal, text string) Message {
	r.seq++
	return Message{Channel: channelOf(principal), ID: fmt.Sprintf("m-%d", r.seq), Principal: principal,
		Chat: ChatOf(principal), Text: text, Lang: "en"}
}

// say sends text as principal in its private chat, in English, and
// returns the replies' text.
func (r *rig) say(principal, text string) string {
	r.t.Helper()
	m := r.msg(principal, text)
	m.Lang = "en"
	return joinText(r.core.Handle(context.Background(), m))
}

// sayRaw sends text with no language given: the core decides.
func (r *rig) sayRaw(principal, text string) string {
	r.t.Helper()
	m := r.msg(principal, text)
	m.Lang = ""
	return joinText(r.core.Handle(context.Background(), m))
}

func (r *rig) sayZh(principal, text string) string {
	r.t.Helper()
	m := r.msg(principal, text)
	m.Lang = "zh"
	return joinText(r.core.Handle(context.Background(), m))
}

func joinText(rs []Reply) string {
	var parts []string
	for _, x := range rs {
		parts = append(parts, x.Text)
	}
	return strings.Join(parts, "\n")
}

// submit makes a task through the manager directly.
func (r *rig) submit(principal, u string) *tasks.Task {
	r.t.Helper()
	tk, err := r.m.Submit(context.Background(), tasks.Submission{Principal: principal, ReplyTo: ChatOf(principal), URL: u, Schedule: "every 1h"})
	if err != nil {
		r.t.Fatal(err)
	}
	return tk
}

func (r *rig) task(id string) *tasks.Task {
	r.t.Helper()
	tk, err := r.m.Get(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return tk
}

// startCore runs Core.Run until the test ends.
func (r *rig) startCore() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.core.Run(ctx); close(done) }()
	r.t.Cleanup(func() { cancel(); <-done })
}

// startManager runs the manager's scheduling loop until the test ends.
func (r *rig) startManager() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.eng.Run(ctx); close(done) }()
	r.t.Cleanup(func() { cancel(); <-done })
	waitFor(r.t, func() bool { ok, _ := r.eng.Scheduler.Owner(); return ok })
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func contains(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("reply %q\ndoes not contain %q", got, w)
		}
	}
}

func excludes(t *testing.T, got string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(got, b) {
			t.Errorf("reply %q\ncontains %q", got, b)
		}
	}
}

// requestID finds "r-xxxxxx" in a reply.
func requestID(t *testing.T, s string) string {
	t.Helper()
	id := reRequestID.FindString(s)
	if id == "" {
		t.Fatalf("no request id in %q", s)
	}
	return id
}

var reRequestID = regexp.MustCompile(`r-[0-9a-f]{6}`)

var errFeedAuth = errors.New(`GET https://news.example.edu/feed.xml?token=s3cr3t-feed-token: 401 Unauthorized`)

func items(n int) []watch.Item {
	out := make([]watch.Item, n)
	for i := range out {
		id := fmt.Sprintf("item-%d", i)
		out[i] = watch.Item{ID: id, Title: "Item " + id, URL: "https://news.example.edu/" + id, Digest: "d-" + id}
	}
	return out
}
