package delivery_test

import (
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// windowSink deduplicates by the delivery key for an hour, as Feishu does
// by message uuid.
type windowSink struct{ nopSink }

func (windowSink) DedupWindow() time.Duration { return time.Hour }

// TestI3_CrashReplayOnlyWhereTheRecipientDropsRepeats: a push a crash
// interrupted after its request may have left is sent again on recovery
// only when its recipient drops repeats by key — an idempotent webhook,
// an inbox, Feishu while its uuid window still has room — and the push
// has not expired or used up its automatic replays.
func TestI3_CrashReplayOnlyWhereTheRecipientDropsRepeats(t *testing.T) {
	now := t0
	table := delivery.NewTable(delivery.TableConfig{
		Sinks: map[delivery.AddressKind]delivery.Sink{delivery.FeishuChat: windowSink{nopSink{dedups: true}}, delivery.TelegramChat: nopSink{}},
		Named: map[string]delivery.Route{
			"idem":  {Sink: nopSink{dedups: true}, To: delivery.Address{Kind: delivery.Webhook, Name: "idem"}},
			"plain": {Sink: nopSink{}, To: delivery.Address{Kind: delivery.Webhook, Name: "plain"}},
		},
	})
	r := newRig(t)
	d, err := delivery.NewDispatcher(delivery.Options{Ledger: r.st.Ledger(), Router: table, Now: func() time.Time { return now }, MaxIdempotentAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	fx := func(recipient string, started time.Duration, attempts int, expires time.Duration) store.Effect {
		e := store.Effect{Key: "k", Recipient: recipient, ExpiresAt: now.Add(expires)}
		for i := range attempts {
			e.Attempts = append(e.Attempts, store.Attempt{N: i + 1, Start: now.Add(-started)})
		}
		return e
	}
	for _, tc := range []struct {
		name string
		fx   store.Effect
		want bool
	}{
		{"idempotent webhook", fx("idem", time.Minute, 1, time.Hour), true},
		{"plain webhook", fx("plain", time.Minute, 1, time.Hour), false},
		{"telegram", fx("telegram:chat:1", time.Minute, 1, time.Hour), false},
		{"feishu inside its window", fx("feishu:chat:oc_1", 20*time.Minute, 1, time.Hour), true},
		{"feishu near the window's end", fx("feishu:chat:oc_1", 55*time.Minute, 1, time.Hour), false},
		{"expired", fx("idem", time.Minute, 1, -time.Second), false},
		{"replays used up", fx("idem", time.Minute, 3, time.Hour), false},
		{"unknown recipient", fx("gone", time.Minute, 1, time.Hour), false},
	} {
		if got := d.Replayable(tc.fx); got != tc.want {
			t.Errorf("%s: replay %t, want %t", tc.name, got, tc.want)
		}
	}
}
