package delivery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// nopSink accepts everything; dedups says whether its provider
// deduplicates by the delivery key.
type nopSink struct{ dedups bool }

func (nopSink) Send(context.Context, delivery.Delivery) delivery.Outcome {
	return delivery.Outcome{Result: delivery.Completed}
}

func (s nopSink) Dedups(delivery.Address) bool { return s.dedups }

var (
	_ delivery.Sink          = nopSink{}
	_ delivery.Deduplicating = nopSink{}
)

func TestTableResolve(t *testing.T) {
	shanghai := time.FixedZone("CST", 8*3600)
	tg, fs, hook := nopSink{}, nopSink{dedups: true}, nopSink{dedups: true}
	table := delivery.NewTable(delivery.TableConfig{
		Sinks: map[delivery.AddressKind]delivery.Sink{delivery.TelegramChat: tg, delivery.FeishuChat: fs},
		Named: map[string]delivery.Route{
			"ops":      {Sink: hook, To: delivery.Address{Kind: delivery.Webhook, Name: "ops"}},
			"ops-chat": {Sink: tg, To: delivery.Address{Kind: delivery.TelegramChat, ID: "-100123"}, Lang: "zh"},
		},
		Lang: "en", Zone: shanghai,
		Langs:    func(address string) string { return map[string]string{"telegram:chat:7": "zh"}[address] },
		Disabled: map[delivery.AddressKind]string{delivery.InboxAddr: "inbox is switched off"},
	})
	cases := []struct {
		recipient string
		kind      delivery.AddressKind
		lang      string
		dedups    bool
		err       string
	}{
		{recipient: "telegram:chat:42", kind: delivery.TelegramChat, lang: "en"},
		{recipient: "telegram:chat:7", kind: delivery.TelegramChat, lang: "zh"},
		{recipient: "feishu:user:ou_1", kind: delivery.FeishuChat, lang: "en", dedups: true},
		{recipient: "ops", kind: delivery.Webhook, lang: "en", dedups: true},
		{recipient: "ops-chat", kind: delivery.TelegramChat, lang: "zh"},
		{recipient: "inbox:console:alice", err: "inbox is switched off"},
		{recipient: "telegram:chat:abc", err: "integer"},
		{recipient: "team-alerts", err: "no recipient named"},
	}
	for _, c := range cases {
		t.Run(c.recipient, func(t *testing.T) {
			r, err := table.Resolve(c.recipient)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.To.Kind != c.kind || r.Lang != c.lang || r.Dedups != c.dedups || r.Zone != shanghai || r.Sink == nil {
				t.Errorf("route %+v; want kind %s lang %s dedups %t in the default zone", r, c.kind, c.lang, c.dedups)
			}
		})
	}

	table.Swap(delivery.TableConfig{})
	if _, err := table.Resolve("telegram:chat:42"); err == nil {
		t.Error("after a reload without Telegram, a Telegram chat still resolves")
	}
}

// A push whose transport is switched off (its token unset) waits durably
// and goes out once the transport is back after a reload.
func TestPushWaitsWhileItsTransportIsOff(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	table := delivery.NewTable(delivery.TableConfig{Disabled: map[delivery.AddressKind]string{delivery.TelegramChat: "token not set"}})
	key := r.admit("hook:ci", "d-1", "telegram:chat:42", inbound("deploy"), 0)
	r.start(table, "w", nil)
	waitFor(t, func() bool {
		fx := r.effect(key)
		return fx.State == store.Pending && len(fx.Attempts) == 0 && fx.NotBefore.After(r.clock.Now())
	}, "the push to be held")
	if n := len(api.sent()); n != 0 {
		t.Fatalf("%d messages sent while the transport was off", n)
	}
	on := telegramRoute(t, api.URL)
	route, err := on.Resolve("telegram:chat:42")
	if err != nil {
		t.Fatal(err)
	}
	table.Swap(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.TelegramChat: route.Sink}})
	r.advance(time.Minute)
	r.settled(key, store.Completed)
	if n := len(api.sent()); n != 1 {
		t.Fatalf("%d messages after the transport came back, want 1", n)
	}
}
