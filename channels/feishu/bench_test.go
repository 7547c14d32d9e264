package feishu

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/herald-bridge/herald/conversation"
)

// BenchmarkEventHandler measures one signed, encrypted message event from
// the request to its 200: signature, decryption, token check, two
// durable dedup marks on bbolt and the enqueue (the turn itself answers
// nothing).
func BenchmarkEventHandler(b *testing.B) {
	r := newTestChannel(b, true)
	r.h.answer = func(conversation.Message) []conversation.Reply { return nil }
	bodies := make([][]byte, b.N)
	heads := make([]map[string]string, b.N)
	for i := range bodies {
		id := strconv.Itoa(i)
		bodies[i], heads[i] = seal(b, messageEvent(testToken, "ev-b"+id, "om_b"+id, chatP2P, "p2p", "/help"), testKey, r.now)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if w := r.serve(bodies[i], heads[i]); w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	b.StopTimer()
	r.ch.chats.wait()
}
