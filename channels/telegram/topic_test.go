package telegram

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/conversation"
)

// TestForumTopicMessages: a message sent in a forum topic names the
// topic's address and is answered in that topic, every part of the
// reply; a message_thread_id without is_topic_message (a reply thread
// outside topics) is no topic.
func TestForumTopicMessages(t *testing.T) {
	cases := []struct {
		name, extra string
		topic       string // conversation.Message.Topic
		thread      string // message_thread_id of the replies
	}{
		{"in a topic", `,"message_thread_id":77,"is_topic_message":true`, "telegram:chat:-1001234:topic:77", "77"},
		{"a reply thread outside topics", `,"message_thread_id":77`, "", ""},
		{"outside topics", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.h.reply = func(conversation.Message) []conversation.Reply {
				return []conversation.Reply{{Text: strings.Repeat("watching <b>&\n", 600)}}
			}
			c := e.channel(t, e.options(ModeWebhook))
			postHook(t, c.WebhookHandler(), testSecret, groupText(3, "/watch@herald_bot https://a.example.edu/f", tc.extra))
			got := e.h.messages()
			if len(got) != 1 || got[0].Topic != tc.topic || got[0].Chat != "telegram:chat:-1001234" {
				t.Fatalf("handled %+v, want topic %q in the group's conversation", got, tc.topic)
			}
			sends := e.api.callsTo("sendMessage")
			if len(sends) < 2 {
				t.Fatalf("%d parts, want a split reply", len(sends))
			}
			for i, s := range sends {
				if s.Params["chat_id"] != "-1001234" || s.Params["message_thread_id"] != tc.thread {
					t.Errorf("part %d to chat %s thread %q, want thread %q", i, s.Params["chat_id"], s.Params["message_thread_id"], tc.thread)
				}
			}
		})
	}
}

// TestSayToForumTopic: Say reaches a topic's address with
// message_thread_id, and the General topic without it.
func TestSayToForumTopic(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModePolling))
	for addr, thread := range map[string]string{
		"telegram:chat:-100777:topic:9": "9",
		"telegram:chat:-100778:topic:1": "",
		"telegram:chat:-100779":         "",
	} {
		if err := c.Say(context.Background(), addr, conversation.Reply{Text: "decided"}); err != nil {
			t.Fatalf("Say(%s): %v", addr, err)
		}
		sends := e.api.callsTo("sendMessage")
		last := sends[len(sends)-1]
		if !strings.HasPrefix(addr, "telegram:chat:"+last.Params["chat_id"]) || last.Params["message_thread_id"] != thread {
			t.Errorf("Say(%s) sent %v, want thread %q", addr, last.Params, thread)
		}
	}
	for _, bad := range []string{"telegram:chat:-100777:topic:0", "telegram:chat:-100777:topic:x"} {
		if err := c.Say(context.Background(), bad, conversation.Reply{Text: "x"}); err == nil {
			t.Errorf("Say(%s) accepted", bad)
		}
	}
}
