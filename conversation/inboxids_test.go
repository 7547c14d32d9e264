package conversation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/store"
)

// TestInbox_ShortNumbersInChat: /inbox lists each notice by its short
// number in the person's inbox, as /help's "/read 7" promises; /read
// takes that number, past 9 too, and the 16-digit ids are never shown.
func TestInbox_ShortNumbersInChat(t *testing.T) {
	r := newRig(t, defaultPolicy())
	for i := 1; i <= 12; i++ {
		if _, err := r.store.Inbox().Append(context.Background(), store.InboxItem{Principal: carol,
			EffectKey: fmt.Sprintf("fx-%d", i), Title: fmt.Sprintf("Notice number %d", i), CreatedAt: t0}, 0); err != nil {
			t.Fatal(err)
		}
	}
	got := r.say(carol, "/inbox")
	contains(t, got, "\n12  ", "\n11  ", "\n3  ")
	excludes(t, got, "000000")
	contains(t, r.say(carol, "/help"), "/read 7")
	for _, n := range []string{"7", "10", "12"} {
		read := r.say(carol, "/read "+n)
		contains(t, read, n+"  ", "Notice number "+n)
		excludes(t, read, "000000")
	}
	if !strings.Contains(r.sayZh(carol, "/read 11"), "Notice number 11") {
		t.Error("/read 11 in Chinese does not find item 11")
	}
}
