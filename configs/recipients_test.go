package configs

import (
	"slices"
	"testing"

	"github.com/herald-bridge/herald/delivery/bark"
	"github.com/herald-bridge/herald/delivery/dingtalkbot"
	"github.com/herald-bridge/herald/delivery/discord"
	"github.com/herald-bridge/herald/delivery/email"
	"github.com/herald-bridge/herald/delivery/ntfy"
	"github.com/herald-bridge/herald/delivery/onebot"
	"github.com/herald-bridge/herald/delivery/pushplus"
	"github.com/herald-bridge/herald/delivery/serverchan"
	"github.com/herald-bridge/herald/delivery/slack"
	"github.com/herald-bridge/herald/delivery/wecombot"
)

// TestRecipientSinks_KeyIsKind: every sink section registered in
// Recipient is keyed in YAML by the kind its sink reports in metrics and
// redacted addresses, and the keys are those the config file accepts.
func TestRecipientSinks_KeyIsKind(t *testing.T) {
	if got, want := SinkKeys(), []string{"feishu_bot", "webhook", "wecom_bot", "dingtalk_bot", "email", "slack", "discord", "ntfy", "bark", "onebot", "pushplus", "serverchan"}; !slices.Equal(got, want) {
		t.Fatalf("sink keys %v, want %v", got, want)
	}
	r := Recipient{FeishuBot: &FeishuBot{}, Webhook: &Webhook{}, WeComBot: &wecombot.Config{}, DingTalkBot: &dingtalkbot.Config{}, Email: &email.Config{},
		Slack: &slack.Config{}, Discord: &discord.Config{}, Ntfy: &ntfy.Config{}, Bark: &bark.Config{},
		OneBot: &onebot.Config{}, PushPlus: &pushplus.Config{}, ServerChan: &serverchan.Config{}}
	for _, s := range r.Sinks() {
		if string(s.Config.Kind()) != s.Key {
			t.Errorf("section %q builds kind %q", s.Key, s.Config.Kind())
		}
	}
	if (Recipient{Address: "inbox:console:admin"}).Sink() != nil {
		t.Error("an address recipient has no sink section")
	}
}
