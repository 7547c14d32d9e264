package conversation

import (
	"strings"
	"testing"
	"unicode"
)

// TestWhoamiNamesPrincipalChatAndTopic: a person setting herald up asks
// /whoami and reads back the principal and chat address to put in the
// config, in their language, with the forum topic when asked in one.
func TestWhoamiNamesPrincipalChatAndTopic(t *testing.T) {
	r := newRig(t, defaultPolicy())
	got := r.say(alice, "/whoami")
	contains(t, got, "You are "+alice, "This chat is "+ChatOf(alice))
	excludes(t, got, "topic")

	zh := r.sayZh(alice, "/我是谁")
	contains(t, zh, alice, ChatOf(alice))
	if !strings.ContainsFunc(zh, func(c rune) bool { return unicode.Is(unicode.Han, c) }) {
		t.Errorf("the Chinese answer is not in Chinese: %s", zh)
	}

	const topic = group + ":topic:42"
	got = r.inTopic(alice, topic, "/whoami")
	contains(t, got, "You are "+alice, "This chat is "+group, "This topic is "+topic)

	contains(t, r.say(alice, "/help"), "/whoami")
	contains(t, r.sayZh(alice, "/help"), "/whoami")
	contains(t, r.say(alice, "/whoami extra"), "/whoami")
}
