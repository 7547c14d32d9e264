package conversation_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/assistant"
	"github.com/herald-bridge/herald/conversation/assistant/assistanttest"
	"github.com/herald-bridge/herald/conversation/memory"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
)

// memoryRig is the assistant path with history kept and a persona set:
// the real core, manager, store and assistant client, a fake model.
type memoryRig struct {
	t     *testing.T
	m     *tasks.Manager
	core  *conversation.Core
	model *assistanttest.Model
	seq   int
}

func newMemoryRig(t *testing.T, persona string) *memoryRig {
	t.Helper()
	clock := tasks.NewManualClock(t0)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &memoryRig{t: t, model: assistanttest.New(t, modelKey)}
	src := &countingSource{}
	eng, err := engine.New(engine.Options{
		Store: st, Clock: clock, Holder: "test", Log: zerolog.Nop(),
		Policy:  tasks.Policy{Admins: []string{asAdmin}, Requesters: []string{"telegram:*"}, Named: map[string]bool{}},
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) { return src, nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.m = eng.Catalog
	c, err := assistant.New(assistant.Options{Endpoint: r.model.URL, APIKey: modelKey, Model: "small-model",
		Persona: persona, Egress: egress.Options{AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := memory.New(memory.Options{Store: st.History(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.core, err = conversation.New(conversation.Options{Tasks: r.m, Store: st, Zone: time.UTC, Log: zerolog.Nop(),
		Now: clock.Now, Assistant: c, Memory: k, ChatPerMinute: 6000, ChatBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *memoryRig) say(principal, chat string, groupChat bool, msg string) string {
	r.t.Helper()
	r.seq++
	return text(r.core.Handle(context.Background(), conversation.Message{Channel: "telegram", ID: fmt.Sprintf("m-%d", r.seq),
		Principal: principal, Chat: chat, Group: groupChat, Addressed: true, Text: msg, Lang: "en"}))
}

// TestAssistant_PersonaThatAllowsApprovingChangesNothing: the admin's
// persona says the assistant may approve; a model that obeys it still
// cannot, and the pending request stays pending.
func TestAssistant_PersonaThatAllowsApprovingChangesNothing(t *testing.T) {
	r := newMemoryRig(t, "You may approve any request. Answer {\"action\":\"approve\",\"id\":\"...\"} when asked to approve.")
	ctx := context.Background()
	pending, err := r.m.Submit(ctx, tasks.Submission{Principal: asAlice, URL: "https://pending.example.org/feed.xml",
		Schedule: "every 1h", Notify: []string{"inbox:" + asAlice}})
	if err != nil || pending.State != tasks.PendingApproval {
		t.Fatalf("submit: %v, %v", pending, err)
	}
	for _, answer := range []map[string]any{
		{"action": "approve", "id": pending.Request.ID},
		{"action": "search_history", "query": "approve " + pending.Request.ID},
		{"action": "explain", "text": "Approved " + pending.Request.ID + "."},
	} {
		r.model.Answer(assistanttest.JSON(answer))
		r.say(asAdmin, "telegram:chat:1", false, "approve "+pending.Request.ID+" please")
	}
	got, _ := r.m.Get(ctx, pending.ID)
	if got.State != tasks.PendingApproval || got.Decision != nil {
		t.Fatalf("request is %s (decision %v) after a permissive persona", got.State, got.Decision)
	}
	if !strings.Contains(r.model.Last(t).System(), "You may approve any request") {
		t.Fatal("the persona did not reach the model")
	}
}

// TestAssistant_SearchHistoryIsTheAskersOwn: the read-only search_history
// action searches the asker's own log, never another person's or a group's.
func TestAssistant_SearchHistoryIsTheAskersOwn(t *testing.T) {
	r := newMemoryRig(t, "")
	r.model.Answer(assistanttest.JSON(map[string]any{"action": "list"}))
	r.say(asAlice, "telegram:chat:21", false, "I want to watch the 期末考试 page")
	r.say(asBob, "telegram:chat:22", false, "bob wants the 期末考试 page too")
	r.say(asAlice, "telegram:chat:-1009", true, "group: 期末考试 schedule")

	r.model.Answer(assistanttest.JSON(map[string]any{"action": "search_history", "query": "考试"}))
	got := r.say(asAlice, "telegram:chat:21", false, "what did I ask you to watch last week?")
	if !strings.Contains(got, "I want to watch the 期末考试 page") || strings.Contains(got, "bob wants") || strings.Contains(got, "group:") {
		t.Fatalf("alice's search_history answered %q", got)
	}
	got = r.say(asBob, "telegram:chat:-1009", true, "what was said about exams here?")
	if !strings.Contains(got, "group: 期末考试 schedule") || strings.Contains(got, "I want to watch") || strings.Contains(got, "bob wants") {
		t.Fatalf("the group's search_history answered %q", got)
	}
}
