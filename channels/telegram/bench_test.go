package telegram

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/go-telegram/bot/models"
)

// BenchmarkMapUpdate measures decoding and mapping one group update.
func BenchmarkMapUpdate(b *testing.B) {
	raw := []byte(groupText(1, "hey 🙂 @herald_bot /watch https://a.example.edu/feed.xml every 1h", `,"entities":[{"type":"mention","offset":7,"length":11}]`))
	me := identity{ID: testBotID, Username: testUsername}
	b.ReportAllocs()
	for b.Loop() {
		var u models.Update
		if err := json.Unmarshal(raw, &u); err != nil {
			b.Fatal(err)
		}
		if _, ok := mapUpdate(&u, me); !ok {
			b.Fatal("not mapped")
		}
	}
}

// BenchmarkWebhookUpdate measures one webhook update end to end: secret
// check, decode, durable claim in bbolt, the turn and the sendMessage
// reply to a local fake Bot API.
func BenchmarkWebhookUpdate(b *testing.B) {
	e := newEnv(b)
	c := e.channel(b, e.options(ModeWebhook))
	h := c.WebhookHandler()
	id := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		id++
		if rec := postHook(b, h, testSecret, privateText(id, 501, "/tasks")); rec.Code != http.StatusOK {
			b.Fatalf("answer %d", rec.Code)
		}
	}
}
