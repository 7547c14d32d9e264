package conversation

import (
	"context"
	"fmt"
	"testing"
)

// inTopic sends text as principal in the group's forum topic topic ("":
// outside any topic), addressed to the bot.
func (r *rig) inTopic(principal, topic, text string) string {
	r.t.Helper()
	r.seq++
	m := Message{Channel: "telegram", ID: fmt.Sprintf("t-%d", r.seq), Principal: principal, Chat: group, Topic: topic,
		Group: true, Addressed: true, Text: text, Lang: "en"}
	return joinText(r.core.Handle(context.Background(), m))
}

// TestWatchInForumTopicTargetsTheTopic: a /watch sent inside a forum
// topic notifies that topic and sends the task's own notices there; the
// same request outside any topic targets the whole group.
func TestWatchInForumTopicTargetsTheTopic(t *testing.T) {
	const topic = group + ":topic:42"
	r := newRig(t, defaultPolicy())
	got := r.inTopic(alice, topic, "/watch https://example.org/feed.xml every 1h")
	contains(t, got, "Who will be told: this chat")
	tk := r.task(requestID(t, got))
	if len(tk.Notify) != 1 || tk.Notify[0] != topic || tk.ReplyTo != topic {
		t.Fatalf("in a topic: notify %v reply-to %s, want %s", tk.Notify, tk.ReplyTo, topic)
	}

	r.startCore()
	contains(t, r.say(admin, "/approve "+tk.Request.ID), "Approved")
	waitFor(t, func() bool { return len(r.out.to(topic)) == 1 })
	if n := len(r.out.to(group)); n != 0 {
		t.Errorf("the decision also went to the whole group (%d messages)", n)
	}

	got = r.inTopic(alice, "", "/watch https://example.org/other.xml every 1h")
	tk = r.task(requestID(t, got))
	if len(tk.Notify) != 1 || tk.Notify[0] != group || tk.ReplyTo != group {
		t.Fatalf("outside topics: notify %v reply-to %s, want %s", tk.Notify, tk.ReplyTo, group)
	}
}
