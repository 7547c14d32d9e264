package conversation_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/assistant"
	"github.com/herald-bridge/herald/conversation/assistant/assistanttest"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
)

// The assistant path end to end: the real conversation core, task
// manager and bbolt store, the real assistant client, and a fake model
// speaking the chat-completions wire format on 127.0.0.1.

const (
	modelKey  = "sk-live-assistant-0c1d2e3f4a5b6978"
	asAdmin   = "telegram:1"
	asAlice   = "telegram:21"
	asBob     = "telegram:22"
	feedURL   = "https://lms.example.edu/feed.xml"
	helpEn    = "I understand commands. Try /watch https://news.example.edu/feed.xml every 1h, or /tasks. Send /help for all commands."
	helpZh    = "我能理解命令。试试 /watch https://news.example.edu/feed.xml every 1h，或 /tasks。发送 /help 查看全部命令。"
	offlineEn = "The assistant for plain-language requests is unavailable right now."
	offlineZh = "理解日常用语的助手暂时不可用。"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// countingSource counts fetches: nothing here may run a task.
type countingSource struct{ n atomic.Int32 }

func (s *countingSource) Fetch(context.Context, watch.Conditional) (watch.Result, error) {
	s.n.Add(1)
	return watch.Result{}, nil
}

var _ tasks.Source = (*countingSource)(nil)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type assistRig struct {
	t       *testing.T
	clock   *tasks.ManualClock
	m       *tasks.Manager
	core    *conversation.Core
	model   *assistanttest.Model
	src     *countingSource
	logs    *syncBuffer
	replies []string // every reply text, for the I10 check
	seq     int
}

type rigOpts struct {
	noAssistant bool
	perHour     int
	timeout     time.Duration
}

func newAssistRig(t *testing.T, o rigOpts) *assistRig {
	t.Helper()
	r := &assistRig{t: t, clock: tasks.NewManualClock(t0), src: &countingSource{}, logs: &syncBuffer{}}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := zerolog.New(r.logs).Level(zerolog.DebugLevel)
	eng, err := engine.New(engine.Options{
		Store: st, Clock: r.clock, Holder: "test", Log: log,
		Policy: tasks.Policy{Admins: []string{asAdmin}, Requesters: []string{"telegram:*", "console:*"}, Named: map[string]bool{}},
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			return r.src, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.m = eng.Catalog
	opts := conversation.Options{Tasks: r.m, Store: st, Zone: time.UTC, BotName: "herald_bot", Log: log,
		Now: r.clock.Now, AssistantPerHour: o.perHour, ChatPerMinute: 6000, ChatBurst: 1000}
	r.model = assistanttest.New(t, modelKey)
	if !o.noAssistant {
		opts.Assistant = r.client(o.timeout)
	}
	r.core, err = conversation.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// client is the real assistant client on the fake, over loopback as
// policy.allow_private_networks allows.
func (r *assistRig) client(timeout time.Duration) conversation.Assistant {
	c, err := assistant.New(assistant.Options{Endpoint: r.model.URL, APIKey: modelKey, Model: "small-model",
		Timeout: timeout, Egress: egress.Options{AllowPrivate: true}})
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func (r *assistRig) handle(m conversation.Message) []conversation.Reply {
	r.t.Helper()
	out := r.core.Handle(context.Background(), m)
	for _, x := range out {
		r.replies = append(r.replies, x.Text, x.Toast)
		for _, b := range x.Buttons {
			r.replies = append(r.replies, b.Label, b.Arg)
		}
	}
	return out
}

// say sends text as principal in its private Telegram chat.
func (r *assistRig) say(principal, lang, text string) []conversation.Reply {
	r.t.Helper()
	r.seq++
	id := strings.TrimPrefix(principal, "telegram:")
	return r.handle(conversation.Message{Channel: "telegram", ID: fmt.Sprintf("m-%d", r.seq), Principal: principal,
		Chat: "telegram:chat:" + id, Text: text, Lang: lang})
}

// press presses a button as principal in its private chat.
func (r *assistRig) press(principal string, b conversation.Button) []conversation.Reply {
	r.t.Helper()
	r.seq++
	id := strings.TrimPrefix(principal, "telegram:")
	return r.handle(conversation.Message{Channel: "telegram", ID: fmt.Sprintf("m-%d", r.seq), Principal: principal,
		Chat: "telegram:chat:" + id, Lang: "en", Button: &conversation.Press{Action: b.Action, Arg: b.Arg, Ref: "telegram:chat:" + id + ":7"}})
}

func (r *assistRig) tasksOf(principal string) []*tasks.Task {
	r.t.Helper()
	list, err := r.m.List(context.Background(), principal)
	if err != nil {
		r.t.Fatal(err)
	}
	return list
}

func text(rs []conversation.Reply) string {
	parts := make([]string, 0, len(rs))
	for _, x := range rs {
		parts = append(parts, x.Text)
	}
	return strings.Join(parts, "\n")
}

func draftAnswer(kv ...any) assistanttest.Answer {
	a := map[string]any{"action": "draft", "url": feedURL}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return assistanttest.JSON(a)
}

func TestAssistant_PlainTextBecomesADraftToConfirm(t *testing.T) {
	tests := []struct {
		lang, text string
		want       []string
		wantSystem string
	}{
		{"en", "could you keep an eye on " + feedURL + " every hour?",
			[]string{"I can send this request for you:", "/watch " + feedURL + " every 1h as rss", "Reply yes to send it"}, "in English"},
		{"", "请每小时帮我关注 " + feedURL,
			[]string{"我可以替你提交这个申请：", "/watch " + feedURL + " every 1h as rss", "回复“好”提交"}, "in Chinese"},
	}
	for _, tt := range tests {
		t.Run("lang="+tt.lang, func(t *testing.T) {
			r := newAssistRig(t, rigOpts{})
			r.model.Answer(draftAnswer("schedule", "every 1h", "kind", "rss"))
			out := r.say(asAlice, tt.lang, tt.text)
			if len(out) != 1 {
				t.Fatalf("replies = %+v", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out[0].Text, w) {
					t.Errorf("reply %q lacks %q", out[0].Text, w)
				}
			}
			if b := out[0].Buttons; len(b) != 2 || b[0].Action != "draft_send" || b[1].Action != "draft_drop" || b[0].Arg == "" || len(b[0].Data()) > 64 {
				t.Errorf("buttons = %+v, want Send and Drop", b)
			}
			if got := r.model.Last(t); got.User() != tt.text || !strings.Contains(got.System(), tt.wantSystem) {
				t.Errorf("model asked %q with a system prompt lacking %q", got.User(), tt.wantSystem)
			}
			if n := len(r.tasksOf(asAlice)); n != 0 {
				t.Errorf("a draft created %d tasks before any confirmation", n)
			}
		})
	}
}

var reIDs = regexp.MustCompile(`\b[rt]-[0-9a-f]{6}\b`)

// TestAssistant_ConfirmedDraftIsAnOrdinaryWatchRequest: confirming a
// draft, in words or with the button, creates the same pending request,
// with the same answer, as typing the /watch it showed; nothing is
// approved and nothing runs.
func TestAssistant_ConfirmedDraftIsAnOrdinaryWatchRequest(t *testing.T) {
	typed := newAssistRig(t, rigOpts{noAssistant: true})
	wantReply := reIDs.ReplaceAllString(text(typed.say(asAlice, "en", "/watch "+feedURL+" every 1h as rss name \"Course news\"")), "ID")
	want := typed.tasksOf(asAlice)[0]

	tests := []struct {
		name    string
		confirm func(r *assistRig, draft conversation.Reply) []conversation.Reply
	}{
		{"yes", func(r *assistRig, _ conversation.Reply) []conversation.Reply { return r.say(asAlice, "en", "yes") }},
		{"ok.", func(r *assistRig, _ conversation.Reply) []conversation.Reply { return r.say(asAlice, "en", "OK.") }},
		{"button", func(r *assistRig, d conversation.Reply) []conversation.Reply { return r.press(asAlice, d.Buttons[0]) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newAssistRig(t, rigOpts{})
			r.model.Answer(draftAnswer("schedule", "every 1h", "kind", "rss", "name", "Course news"))
			draft := r.say(asAlice, "en", "watch the course feed "+feedURL+" hourly, call it Course news")
			if len(draft) != 1 || len(draft[0].Buttons) != 2 {
				t.Fatalf("draft = %+v", draft)
			}
			out := tt.confirm(r, draft[0])
			if got := reIDs.ReplaceAllString(text(out), "ID"); got != wantReply {
				t.Errorf("reply to the confirmation:\n%s\nwant, as for the typed /watch:\n%s", got, wantReply)
			}
			if tt.name == "button" && (!out[0].Edit || out[0].Toast == "") {
				t.Errorf("a pressed Send should edit the draft and toast: %+v", out[0])
			}
			list := r.tasksOf(asAlice)
			if len(list) != 1 {
				t.Fatalf("tasks = %d, want 1", len(list))
			}
			got := list[0]
			if got.State != tasks.PendingApproval || got.Grant != nil || got.Decision != nil {
				t.Errorf("state %s grant %v decision %v: the request must await an admin", got.State, got.Grant, got.Decision)
			}
			type shape struct {
				Owner, Name, Schedule, ReplyTo, Lang string
				Source                               watch.Spec
				Notify                               []string
				State                                tasks.State
				Origin                               string
			}
			of := func(tk *tasks.Task) shape {
				return shape{tk.Owner, tk.Name, tk.Schedule, tk.ReplyTo, tk.Lang, tk.Source, tk.Notify, tk.State, tk.Origin}
			}
			if !reflect.DeepEqual(of(got), of(want)) {
				t.Errorf("task from the draft %+v\nwant, as from the typed /watch, %+v", of(got), of(want))
			}
			if r.src.n.Load() != 0 {
				t.Error("a source was fetched")
			}
			// The draft is used up: a second yes or press does nothing more.
			r.model.Answer(assistanttest.JSON(map[string]any{"action": "explain", "text": "Send /help."}))
			r.say(asAlice, "en", "yes")
			if again := r.press(asAlice, draft[0].Buttons[0]); again[0].Toast != "This button is no longer valid." {
				t.Errorf("second press = %+v", again)
			}
			if n := len(r.tasksOf(asAlice)); n != 1 {
				t.Errorf("tasks after a second confirmation = %d, want 1", n)
			}
		})
	}
}

// TestAssistant_DraftWithoutScheduleAsksLikeWatch: a draft without a
// schedule, once confirmed, asks how often exactly as /watch does.
func TestAssistant_DraftWithoutScheduleAsksLikeWatch(t *testing.T) {
	r := newAssistRig(t, rigOpts{})
	r.model.Answer(draftAnswer())
	r.say(asAlice, "zh", "帮我关注 "+feedURL)
	if got := text(r.say(asAlice, "zh", "好")); !strings.Contains(got, "多久检查一次") {
		t.Fatalf("after confirming: %q, want the schedule question", got)
	}
	calls := r.model.Calls()
	if got := text(r.say(asAlice, "zh", "好")); !strings.Contains(got, "等待管理员批准") || !strings.Contains(got, "每 1 小时") {
		t.Fatalf("after the schedule answer: %q", got)
	}
	if r.model.Calls() != calls {
		t.Error("answering the follow-up question went to the model")
	}
	if list := r.tasksOf(asAlice); len(list) != 1 || list[0].State != tasks.PendingApproval || list[0].Schedule != "every 1h" {
		t.Errorf("tasks = %+v", list)
	}
}

func TestAssistant_DroppedDraftSendsNothing(t *testing.T) {
	r := newAssistRig(t, rigOpts{})
	r.model.Answer(draftAnswer("schedule", "every 2h"))
	draft := r.say(asAlice, "en", "watch "+feedURL+" every two hours")
	// Bob cannot press Alice's draft.
	if out := r.press(asBob, draft[0].Buttons[0]); len(out) != 1 || out[0].Toast != "This button is no longer valid." {
		t.Errorf("bob's press = %+v", out)
	}
	if got := text(r.say(asAlice, "en", "no")); got != "Dropped; nothing was sent." {
		t.Errorf("no = %q", got)
	}
	if out := r.press(asAlice, draft[0].Buttons[0]); out[0].Toast != "This button is no longer valid." {
		t.Errorf("press after dropping = %+v", out)
	}
	if n := len(r.tasksOf("")); n != 0 {
		t.Errorf("tasks = %d, want none", n)
	}

	// A newer draft replaces an older one, whose button no longer works.
	old := r.say(asAlice, "en", "watch "+feedURL+" every two hours")
	other := "https://lms.example.edu/other.xml"
	r.model.Answer(draftAnswer("url", other, "schedule", "every 2h"))
	if got := text(r.say(asAlice, "en", "actually, the other feed")); !strings.Contains(got, "/watch "+other) {
		t.Fatalf("second draft = %q", got)
	}
	if out := r.press(asAlice, old[0].Buttons[0]); out[0].Toast != "This button is no longer valid." {
		t.Errorf("the older draft's button = %+v", out)
	}
	r.say(asAlice, "en", "yes")
	if list := r.tasksOf(""); len(list) != 1 || list[0].Source.URL != other {
		t.Errorf("tasks = %+v, want the newer draft's only", list)
	}
}

// TestAssistant_NeverApprovesDeletesOrRuns: an admin's plain text, with
// the model answering as if it could decide, changes nothing: a pending
// request stays pending, an active task stays active and unrun.
func TestAssistant_NeverApprovesDeletesOrRuns(t *testing.T) {
	tests := []struct {
		name   string
		answer func(rid, tid string) assistanttest.Answer
		want   string // a fragment of the reply
	}{
		{"approve action", func(rid, _ string) assistanttest.Answer {
			return assistanttest.JSON(map[string]any{"action": "approve", "id": rid})
		}, offlineEn},
		{"delete action", func(_, tid string) assistanttest.Answer {
			return assistanttest.JSON(map[string]any{"action": "delete", "id": tid})
		}, offlineEn},
		{"run action", func(_, tid string) assistanttest.Answer {
			return assistanttest.JSON(map[string]any{"action": "run", "id": tid})
		}, offlineEn},
		{"explain with commands", func(rid, tid string) assistanttest.Answer {
			return assistanttest.JSON(map[string]any{"action": "explain", "text": "/approve " + rid + "\n/delete " + tid + "\n/run " + tid})
		}, "/approve r-"},
		{"draft carrying approve in the URL", func(rid, _ string) assistanttest.Answer {
			return draftAnswer("url", feedURL+" /approve "+rid)
		}, offlineEn},
		{"draft carrying approve in the schedule", func(rid, _ string) assistanttest.Answer {
			return draftAnswer("schedule", "every 1h /approve "+rid)
		}, offlineEn},
		{"draft carrying approve in the name", func(rid, _ string) assistanttest.Answer {
			return draftAnswer("name", `x" /approve `+rid+` "`)
		}, offlineEn},
		{"approve as text after a draft", func(rid, _ string) assistanttest.Answer {
			return assistanttest.Answer{Content: `{"action":"draft","url":"` + feedURL + `"}` + "\n/approve " + rid}
		}, offlineEn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newAssistRig(t, rigOpts{})
			ctx := context.Background()
			pending, err := r.m.Submit(ctx, tasks.Submission{Principal: asAlice, URL: "https://pending.example.org/feed.xml", Schedule: "every 1h", Notify: []string{"inbox:" + asAlice}})
			if err != nil {
				t.Fatal(err)
			}
			active, err := r.m.Submit(ctx, tasks.Submission{Principal: asAdmin, URL: "https://active.example.org/feed.xml", Schedule: "every 1h", Notify: []string{"inbox:" + asAdmin}})
			if err != nil || active.State != tasks.Active {
				t.Fatalf("admin's own task: %v, %v", active, err)
			}
			r.model.Answer(tt.answer(pending.Request.ID, active.ID))
			out := r.say(asAdmin, "en", "approve "+pending.Request.ID+", delete "+active.ID+" and run everything")
			if got := text(out); !strings.Contains(got, tt.want) {
				t.Errorf("reply %q lacks %q", got, tt.want)
			}
			// Whatever was shown, confirming it does not decide anything either.
			r.model.Answer(assistanttest.JSON(map[string]any{"action": "list"}))
			r.say(asAdmin, "en", "yes")
			for _, b := range out[0].Buttons {
				r.press(asAdmin, b)
			}
			p, _ := r.m.Get(ctx, pending.ID)
			a, _ := r.m.Get(ctx, active.ID)
			if p.State != tasks.PendingApproval || p.Decision != nil || a.State != tasks.Active || r.src.n.Load() != 0 {
				t.Errorf("pending is %s (decision %v), active is %s, fetches %d", p.State, p.Decision, a.State, r.src.n.Load())
			}
		})
	}
}

// TestAssistant_FailuresFallBackToHelp: any failure of the assistant
// answers the short help and one plain sentence, in the chat's language.
func TestAssistant_FailuresFallBackToHelp(t *testing.T) {
	tests := []struct {
		name   string
		answer assistanttest.Answer
	}{
		{"garbage JSON", assistanttest.Answer{Content: `{"action":"dra`}},
		{"prose", assistanttest.Answer{Content: "Of course! Watching it now."}},
		{"unknown action", assistanttest.JSON(map[string]any{"action": "subscribe", "url": feedURL})},
		{"non-http URL", draftAnswer("url", "file:///etc/passwd")},
		{"bad schedule", draftAnswer("schedule", "whenever it suits")},
		{"overlong explanation", assistanttest.JSON(map[string]any{"action": "explain", "text": strings.Repeat("x", 2000)})},
		{"500", assistanttest.Answer{Status: 500}},
		{"429", assistanttest.Answer{Status: 429}},
		{"timeout", assistanttest.Answer{Hang: true}},
	}
	for _, tt := range tests {
		for _, lang := range []string{"en", "zh"} {
			t.Run(tt.name+"/"+lang, func(t *testing.T) {
				r := newAssistRig(t, rigOpts{timeout: 100 * time.Millisecond})
				r.model.Answer(tt.answer)
				want := helpEn + "\n" + offlineEn
				if lang == "zh" {
					want = helpZh + "\n" + offlineZh
				}
				if got := text(r.say(asAlice, lang, "watch "+feedURL)); got != want {
					t.Errorf("reply %q\nwant %q", got, want)
				}
				if r.model.Calls() != 1 {
					t.Errorf("model calls = %d, want 1", r.model.Calls())
				}
				if n := len(r.tasksOf("")); n != 0 {
					t.Errorf("tasks = %d", n)
				}
			})
		}
	}
}

func TestAssistant_ListAndExplain(t *testing.T) {
	r := newAssistRig(t, rigOpts{})
	if _, err := r.m.Submit(context.Background(), tasks.Submission{Principal: asAlice, URL: feedURL, Schedule: "every 1h", Notify: []string{"inbox:" + asAlice}}); err != nil {
		t.Fatal(err)
	}
	typed := text(r.say(asAlice, "en", "/tasks"))
	r.model.Answer(assistanttest.JSON(map[string]any{"action": "list"}))
	if got := text(r.say(asAlice, "en", "what am I watching?")); got != typed {
		t.Errorf("list = %q, want the /tasks reply %q", got, typed)
	}
	r.model.Answer(assistanttest.JSON(map[string]any{"action": "explain",
		"text": "发送 /watch https://lms.example.edu/feed.xml?token=abc123secret every 1h 即可。"}))
	got := text(r.say(asAlice, "zh", "怎么关注一个网页？"))
	if got != "发送 /watch https://lms.example.edu/feed.xml?… every 1h 即可。" {
		t.Errorf("explain = %q: want the text with the URL's query redacted", got)
	}
}

// TestAssistant_RateLimitPerPrincipal: the hourly allowance is per
// principal; past it the person gets a plain reply and the model is not
// called; an hour later it is back.
func TestAssistant_RateLimitPerPrincipal(t *testing.T) {
	r := newAssistRig(t, rigOpts{perHour: 2})
	r.model.Answer(assistanttest.JSON(map[string]any{"action": "explain", "text": "Send /help."}))
	for i := 0; i < 2; i++ {
		if got := text(r.say(asAlice, "en", "hello")); got != "Send /help." {
			t.Fatalf("ask %d = %q", i+1, got)
		}
	}
	for _, lang := range []string{"en", "zh"} {
		got := text(r.say(asAlice, lang, "hello again"))
		want := "You have asked me in plain words 2 times in the last hour"
		if lang == "zh" {
			want = "你在一小时内已用日常用语问了我 2 次"
		}
		if !strings.Contains(got, want) {
			t.Errorf("over the limit (%s) = %q, want %q", lang, got, want)
		}
	}
	if r.model.Calls() != 2 {
		t.Errorf("model calls = %d, want 2: asks over the limit must not reach it", r.model.Calls())
	}
	if got := text(r.say(asBob, "en", "hello")); got != "Send /help." || r.model.Calls() != 3 {
		t.Errorf("bob = %q (calls %d): another principal has an allowance of their own", got, r.model.Calls())
	}
	if got := text(r.say(asAlice, "en", "/tasks")); !strings.Contains(got, "You have no tasks") {
		t.Errorf("commands must still work: %q", got)
	}
	r.clock.Advance(time.Hour)
	if got := text(r.say(asAlice, "en", "hello")); got != "Send /help." || r.model.Calls() != 4 {
		t.Errorf("an hour later = %q (calls %d)", got, r.model.Calls())
	}
}

// TestAssistant_OffKeepsTheHelpAnswer: without an assistant, or after a
// reload switches it off, plain text gets the short help and no call.
func TestAssistant_OffKeepsTheHelpAnswer(t *testing.T) {
	r := newAssistRig(t, rigOpts{noAssistant: true})
	if got := text(r.say(asAlice, "en", "watch "+feedURL)); got != helpEn {
		t.Errorf("en = %q", got)
	}
	if got := text(r.say(asAlice, "", "帮我关注 "+feedURL)); got != helpZh {
		t.Errorf("zh = %q", got)
	}
	r.core.SetAssistant(r.client(0), 5)
	r.model.Answer(draftAnswer("schedule", "every 1h"))
	if got := text(r.say(asAlice, "en", "watch "+feedURL)); !strings.Contains(got, "I can send this request") {
		t.Errorf("after switching on = %q", got)
	}
	r.core.SetAssistant(nil, 0)
	r.say(asAlice, "en", "/cancel")
	if got := text(r.say(asAlice, "en", "watch "+feedURL)); got != helpEn {
		t.Errorf("after switching off = %q", got)
	}
	if r.model.Calls() != 1 {
		t.Errorf("model calls = %d, want 1", r.model.Calls())
	}
}

// TestI10_AssistantKeyNeverInLogsOrReplies drives every kind of outcome,
// including a refused key whose error body quotes part of it, with debug
// logging, and looks for the key everywhere herald wrote.
func TestI10_AssistantKeyNeverInLogsOrReplies(t *testing.T) {
	r := newAssistRig(t, rigOpts{timeout: 100 * time.Millisecond})
	answers := []assistanttest.Answer{
		draftAnswer("schedule", "every 1h"),
		{Content: "garbage"},
		{Status: 500},
		{Status: 429},
		{Hang: true},
		assistanttest.JSON(map[string]any{"action": "approve", "id": "r-000000"}),
	}
	for _, a := range answers {
		r.model.Answer(a)
		r.say(asAlice, "en", "watch "+feedURL)
		r.say(asAlice, "en", "no")
	}
	// A client with a wrong key: the fake's 401 body quotes part of it.
	wrong := "sk-live-wrong-1122334455667788"
	c, err := assistant.New(assistant.Options{Endpoint: r.model.URL, APIKey: wrong, Model: "m", Egress: egress.Options{AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	r.core.SetAssistant(c, 0)
	if got := text(r.say(asAlice, "en", "hello")); !strings.Contains(got, offlineEn) {
		t.Errorf("wrong key = %q", got)
	}
	logs := r.logs.String()
	if !strings.Contains(logs, "assistant unavailable") {
		t.Errorf("failures were not logged:\n%s", logs)
	}
	for _, secret := range []string{modelKey, wrong, "Incorrect API key", "Bearer"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
	for _, rep := range r.replies {
		for _, secret := range []string{modelKey, wrong, "Incorrect API key", "127.0.0.1"} {
			if strings.Contains(rep, secret) {
				t.Errorf("a reply contains %q: %q", secret, rep)
			}
		}
	}
}
