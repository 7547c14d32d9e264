package telegram

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"

	"github.com/herald-bridge/herald/delivery/render"
)

// FuzzMapUpdate feeds arbitrary update JSON through the mapping: it must
// not panic, and what it hands on must be well formed.
func FuzzMapUpdate(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, username string) {
		var u models.Update
		if json.Unmarshal(raw, &u) != nil {
			return
		}
		chatOf(&u)
		in, ok := mapUpdate(&u, identity{ID: testBotID, Username: username})
		if !ok {
			return
		}
		m := in.msg
		if in.callback == "" || in.chatID != 0 {
			if !strings.HasPrefix(m.Principal, "telegram:") || !strings.HasPrefix(m.Chat, "telegram:chat:") || !m.Addressed {
				t.Fatalf("malformed message %+v", m)
			}
			if _, err := parseChat(m.Chat); err != nil && in.chatID != 0 {
				t.Fatalf("chat %q does not parse back", m.Chat)
			}
		}
		if in.callback == "" && strings.TrimSpace(m.Text) == "" && !strings.HasPrefix(strings.TrimSpace(u.Message.Text), "@") {
			t.Fatalf("empty text handed on from %q", u.Message.Text)
		}
		if b := m.Button; b != nil && len(b.Action+":"+b.Arg) > MaxCallbackData {
			t.Fatalf("press with %d bytes of data handed on", len(b.Action+":"+b.Arg))
		}
	})
}

// FuzzSplit checks that split keeps every character but the line breaks
// it cuts at, stays within the limit and never cuts an entity.
func FuzzSplit(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = 8 + abs(limit)%300
		s := render.EscapeHTML(strings.TrimSpace(text))
		parts := split(s, limit)
		if strings.ReplaceAll(strings.Join(parts, ""), "\n", "") != strings.ReplaceAll(s, "\n", "") {
			t.Fatalf("split lost text: %q -> %q", s, parts)
		}
		for _, p := range parts {
			if p == "" || render.Length(p) > limit {
				t.Fatalf("part %q (length %d) with limit %d", p, render.Length(p), limit)
			}
			if amp := strings.LastIndexByte(p, '&'); amp >= 0 && !strings.Contains(p[amp:], ";") {
				t.Fatalf("part %q ends inside an entity", p)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the most negative int
			return 0
		}
		return -n
	}
	return n
}
