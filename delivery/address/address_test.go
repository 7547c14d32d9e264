package address

import "testing"

func TestParseRoundTrip(t *testing.T) {
	for _, s := range []string{"telegram:chat:-1001", "feishu:chat:oc_1", "feishu:user:ou_1", "inbox:console:ann", "inbox:telegram:7"} {
		a, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if a.String() != s {
			t.Errorf("Parse(%q).String() = %q", s, a.String())
		}
	}
	for _, s := range []string{"telegram:chat:x", "feishu:chat:", "feishu:user:", "inbox:telegram:-1", "inbox:slack:x", "team-alerts"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func TestPrincipals(t *testing.T) {
	for p, want := range map[string]bool{
		"telegram:1": true, "telegram:-1": false, "telegram:x": false, "feishu:ou_1": true,
		"console:ann": true, "console:": false, "console:a b": false, "slack:x": false, "telegram": false,
		"agent:claude-desktop": true, "agent:": false, "agent:-x": false, "agent:a/b": false, "agent:a b": false,
	} {
		if got := ValidPrincipal(p); got != want {
			t.Errorf("ValidPrincipal(%q) = %v", p, got)
		}
	}
	if !ValidPattern("feishu:*", true) || ValidPattern("feishu:*", false) || ValidPattern("slack:*", true) {
		t.Error("wildcard patterns")
	}
	if got := Forms(); got != "telegram:<user_id>, feishu:<open_id>, console:<name> or agent:<name>" {
		t.Errorf("Forms() = %q", got)
	}
	if got := Patterns(); got != "telegram:*, feishu:*, console:*, agent:*" {
		t.Errorf("Patterns() = %q", got)
	}
	if ChatOf("agent:x") != "" || !IsAgent("agent:x") || IsAgent("console:agent") {
		t.Error("an agent has no chat and is told apart by its kind")
	}
	if !Match("telegram:*", "telegram:5") || Match("telegram:*", "feishu:5") || !Match("*", "x") {
		t.Error("Match")
	}
}

func TestTelegramChat(t *testing.T) {
	if id, err := ParseTelegramChat(TelegramChat(-42)); err != nil || id != -42 {
		t.Fatalf("round trip: %d %v", id, err)
	}
	for _, s := range []string{"telegram:chat:0", "telegram:chat:", "feishu:chat:1"} {
		if _, err := ParseTelegramChat(s); err == nil {
			t.Errorf("ParseTelegramChat(%q) accepted", s)
		}
	}
}

func TestIsChat(t *testing.T) {
	for s, want := range map[string]bool{
		"telegram:chat:-100": true, "feishu:chat:oc_1": true, "feishu:user:ou_1": false,
		"inbox:telegram:1": false, "telegram:1": false, "telegram:chat:x": false, "news": false,
	} {
		if got := IsChat(s); got != want {
			t.Errorf("IsChat(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestTelegramTopicAddresses(t *testing.T) {
	for _, s := range []string{"telegram:chat:-1001:topic:5", "telegram:chat:-1001:topic:1", "telegram:chat:-1001:topic:2147483647"} {
		a, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if a.Kind != Telegram || a.ID != "-1001" || a.Topic == "" || a.String() != s {
			t.Errorf("Parse(%q) = %+v, prints %q", s, a, a.String())
		}
		if IsChat(s) || !IsLiteral(s) {
			t.Errorf("%q: IsChat %v, IsLiteral %v", s, IsChat(s), IsLiteral(s))
		}
		if _, err := ParseTelegramChat(s); err == nil {
			t.Errorf("ParseTelegramChat(%q) took a topic for the whole chat", s)
		}
	}
	for _, s := range []string{"telegram:chat:-1001:topic:", "telegram:chat:-1001:topic:0", "telegram:chat:-1001:topic:-5",
		"telegram:chat:-1001:topic:05", "telegram:chat:-1001:topic:x", "telegram:chat:-1001:topic:2147483648",
		"telegram:chat::topic:5", "telegram:chat:-1001:topic:5:topic:6", "telegram:chat:-1001:thread:5"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
		if _, _, err := ParseTelegramTopic(s); err == nil {
			t.Errorf("ParseTelegramTopic(%q) accepted", s)
		}
	}
	chat, thread, err := ParseTelegramTopic(TelegramTopic(-1001, 42))
	if err != nil || chat != -1001 || thread != 42 {
		t.Errorf("ParseTelegramTopic(TelegramTopic(-1001, 42)) = %d, %d, %v", chat, thread, err)
	}
	chat, thread, err = ParseTelegramTopic(TelegramChat(-1001))
	if err != nil || chat != -1001 || thread != 0 {
		t.Errorf("ParseTelegramTopic(a whole chat) = %d, %d, %v", chat, thread, err)
	}
}

func TestWholeChat(t *testing.T) {
	for in, want := range map[string]string{
		"telegram:chat:-1001:topic:5": "telegram:chat:-1001", "telegram:chat:-1001": "telegram:chat:-1001",
		"feishu:chat:oc_1": "feishu:chat:oc_1", "ops": "ops", "telegram:chat:-1001:topic:x": "telegram:chat:-1001:topic:x",
	} {
		if got := WholeChat(in); got != want {
			t.Errorf("WholeChat(%q) = %q, want %q", in, got, want)
		}
	}
}
