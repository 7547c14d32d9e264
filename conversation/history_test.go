package conversation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/conversation/memory"
	"github.com/herald-bridge/herald/store"
)

const group = "telegram:chat:-1001"

// newHistoryRig is a rig whose core keeps history in the rig's store.
func newHistoryRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, defaultPolicy())
	k, err := memory.New(memory.Options{Store: r.store.History(), Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.core.o.Memory = k
	return r
}

// inGroup sends text as principal in the group, addressed to the bot.
func (r *rig) inGroup(principal, text string) string {
	r.t.Helper()
	r.seq++
	m := Message{Channel: "telegram", ID: fmt.Sprintf("g-%d", r.seq), Principal: principal, Chat: group,
		Group: true, Addressed: true, Text: text, Lang: "en"}
	return joinText(r.core.Handle(context.Background(), m))
}

func (r *rig) stored(log string) []store.Turn {
	r.t.Helper()
	ts, err := r.store.History().List(context.Background(), log, store.HistoryQuery{Limit: 1000})
	if err != nil {
		r.t.Fatal(err)
	}
	return ts
}

func TestHistory_ChineseTwoCharacterSubstringFound(t *testing.T) {
	r := newHistoryRig(t)
	r.sayZh(alice, "期末考试的通知在哪里看？")
	r.sayZh(alice, "今天天气不错")
	got := r.sayZh(alice, "/history 考试")
	contains(t, got, "期末考试的通知在哪里看", "第 1 页")
	excludes(t, got, "天气")
	contains(t, r.sayZh(alice, "/history 末考"), "期末考试")
	contains(t, r.sayZh(alice, "/history 考试通知"), "没有与「考试通知」相符的记录")
}

func TestHistory_EnglishWordFound(t *testing.T) {
	r := newHistoryRig(t)
	r.say(alice, "Where do I see the Exam timetable?")
	r.say(alice, "examinations are over")
	got := r.say(alice, "/history exam")
	contains(t, got, "Exam timetable", "page 1")
	excludes(t, got, "examinations")
	// herald's own answer is found too: the plain-text help mentions /tasks.
	contains(t, r.say(alice, "/history tasks"), "Exam timetable")
}

func TestHistory_PrincipalsAndChatsNeverMixed(t *testing.T) {
	r := newHistoryRig(t)
	r.say(alice, "private note about the exam")
	r.say(bob, "bob's exam question")
	r.inGroup(alice, "group talk about the exam")

	private := r.say(alice, "/history exam")
	contains(t, private, "private note")
	excludes(t, private, "group talk", "bob's")

	inGroup := r.inGroup(bob, "/history exam")
	contains(t, inGroup, "group talk", "telegram:21")
	excludes(t, inGroup, "private note", "bob's exam question")

	contains(t, r.say(bob, "/history exam"), "bob's exam question")
	excludes(t, r.say(bob, "/history exam"), "group talk", "private note")
	// The assistant's search is the asker's too (searchFor is what its
	// search_history action runs).
	tr := &turn{c: r.core, ctx: context.Background(), m: r.msg(bob, ""), lang: "en"}
	got := joinText(historySearch{tr}.searchFor("exam"))
	contains(t, got, "bob's exam question")
	excludes(t, got, "private note", "group talk")
}

func TestHistory_ForgetLeavesNothingSearchable(t *testing.T) {
	r := newHistoryRig(t)
	r.say(alice, "remember the 考试 exam")
	r.say(alice, "and the lab exam")
	r.inGroup(alice, "alice in the group: exam")
	r.inGroup(bob, "bob in the group: exam")

	contains(t, r.say(alice, "/forget"), "Deleted your history (2 turn(s))")
	if ts := r.stored(alice); len(ts) != 0 {
		t.Fatalf("alice's log keeps %d turns after /forget", len(ts))
	}
	for _, q := range []string{"exam", "remember"} {
		contains(t, r.say(alice, "/history "+q), "Nothing in your history matches")
	}
	// A Chinese query is answered in Chinese (each message's own language).
	for _, q := range []string{"考试", "考"} {
		contains(t, r.say(alice, "/history "+q), "你的历史中没有与「"+q+"」相符的记录")
	}
	// In a group, /forget deletes the asker's turns there, not the others'.
	contains(t, r.inGroup(alice, "/forget"), "Deleted your 1 turn(s)")
	got := r.inGroup(bob, "/history exam")
	contains(t, got, "bob in the group")
	excludes(t, got, "alice in the group")
}

func TestHistory_SearchesAndForgetsAreNotKept(t *testing.T) {
	r := newHistoryRig(t)
	r.say(alice, "/history anything")
	r.say(alice, "/forget")
	r.say(alice, "/history@other_bot exam")
	if ts := r.stored(alice); len(ts) != 0 {
		t.Fatalf("kept %d turns: %+v", len(ts), ts)
	}
	r.say(alice, "/tasks")
	if ts := r.stored(alice); len(ts) != 1 || ts[0].Text != "/tasks" || !strings.Contains(ts[0].Reply, "no tasks") {
		t.Fatalf("kept %+v", ts)
	}
}

func TestI10_TokensNeverStoredInHistory(t *testing.T) {
	r := newHistoryRig(t)
	const canvas = "4407~Zr8TqLmN3vXc5bPw2KjH9sYd6FgA1eRu"
	r.say(alice, "here is my canvas token "+canvas+" for the course site")
	r.say(alice, "/watch https://lms.example.edu/feed.ics?token=s3cr3t-feed-token every 1h")
	tok := r.say(alice, "/inbox token")
	if !strings.Contains(tok, "hin_") {
		t.Fatalf("no inbox token issued: %q", tok)
	}
	issued := tok[strings.Index(tok, "hin_"):]
	issued = strings.Fields(issued)[0]
	for _, tr := range r.stored(alice) {
		for _, secret := range []string{canvas, "Zr8TqLmN", "s3cr3t-feed-token", issued} {
			if strings.Contains(tr.Text, secret) || strings.Contains(tr.Reply, secret) {
				t.Fatalf("history keeps %q in %+v", secret, tr)
			}
		}
	}
	got := r.say(alice, "/history canvas token")
	contains(t, got, "[redacted]")
	contains(t, r.say(alice, "/history lms.example.edu"), "lms.example.edu")
}

func TestHistory_PagesAndUsage(t *testing.T) {
	r := newHistoryRig(t)
	for i := range 12 {
		r.clock.Advance(time.Minute)
		r.say(alice, fmt.Sprintf("note %02d about homework", i))
	}
	p1 := r.say(alice, "/history homework")
	contains(t, p1, "note 11", "More: /history homework page 2")
	excludes(t, p1, "note 01")
	p2 := r.say(alice, "/history homework page 2")
	contains(t, p2, "note 01", "note 00", "page 2")
	excludes(t, p2, "note 11", "More:")
	contains(t, r.say(alice, "/history homework page 0"), "A page is a number")
	contains(t, r.say(alice, "/history"), "What should I look for?")
	contains(t, r.sayZh(alice, "/历史 homework 第2页"), "note 00")
}

func TestHistory_RetentionPrunesInChat(t *testing.T) {
	r := newHistoryRig(t)
	r.core.o.Memory.SetBounds(24*time.Hour, 0)
	r.say(alice, "old exam note")
	r.clock.Advance(25 * time.Hour)
	r.say(alice, "new exam note")
	got := r.say(alice, "/history exam")
	contains(t, got, "new exam note")
	excludes(t, got, "old exam note")
	if ts := r.stored(alice); len(ts) != 1 {
		t.Fatalf("the log keeps %d turns past retention", len(ts))
	}
}

func TestHistory_OffSaysSo(t *testing.T) {
	r := newRig(t, defaultPolicy())
	contains(t, r.say(alice, "/history exam"), "not kept here")
	contains(t, r.say(alice, "/forget"), "not kept here")
}

// TestHistory_ChineseAfterALinkIsKept: a link followed at once by a
// full-width parenthesis loses its query in history, not the Chinese
// words after it, and those words are found again.
func TestHistory_ChineseAfterALinkIsKept(t *testing.T) {
	r := newHistoryRig(t)
	r.sayZh(alice, "\u89C1 https://a.example/x?token=abc\uFF08\u622A\u6B62\u5468\u4E94\uFF09\u8BF7\u770B")
	got := r.sayZh(alice, "/history \u622A\u6B62")
	contains(t, got, "https://a.example/x", "\uFF08\u622A\u6B62\u5468\u4E94\uFF09\u8BF7\u770B")
	excludes(t, got, "token=abc", "abc")
	for _, tr := range r.stored(alice) {
		if strings.Contains(tr.Text, "abc") {
			t.Fatalf("history keeps the query: %q", tr.Text)
		}
	}
}
