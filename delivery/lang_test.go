package delivery_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store/bolt"
)

// Notices to an inbox follow its owner's language: the one pinned or last
// used in the owner's private chat (a console user's console), since an
// inbox has none of its own. A chat's own language is its own.
func TestPrefStoreLang_AnInboxFollowsItsOwnersChat(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ps := &delivery.PrefStore{KV: st.Channels(), Zone: time.UTC}
	ctx := context.Background()
	for chat, lang := range map[string]string{"console:carol": "zh", "telegram:chat:42": "en", "telegram:chat:-100": "zh"} {
		if err := ps.Update(ctx, chat, func(p *delivery.Prefs) { p.Lang = lang }); err != nil {
			t.Fatal(err)
		}
	}
	for to, want := range map[string]string{
		"inbox:console:carol": "zh", "inbox:telegram:42": "en", "telegram:chat:-100": "zh",
		"inbox:console:dave": "", "inbox:agent:bot": "", "team-alerts": "",
	} {
		if got := ps.Lang(to); got != want {
			t.Errorf("Lang(%s) = %q, want %q", to, got, want)
		}
	}
}
