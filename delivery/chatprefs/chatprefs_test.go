package chatprefs_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store/bolt"
)

// Notices to an inbox follow its owner's language: the one pinned or last
// used in the owner's private chat (a console user's console), since an
// inbox has none of its own. A chat's own language is its own.
func TestStoreLang_AnInboxFollowsItsOwnersChat(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ps := &chatprefs.Store{KV: st.Channels(), Zone: time.UTC}
	ctx := context.Background()
	for chat, lang := range map[string]string{"console:carol": "zh", "telegram:chat:42": "en", "telegram:chat:-100": "zh"} {
		if err := ps.Update(ctx, chat, func(p *chatprefs.Prefs) { p.Lang = lang }); err != nil {
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

func TestParseQuiet(t *testing.T) {
	cases := []struct {
		in       string
		from, to time.Duration
		ok       bool
	}{
		{"22:00-07:00", 22 * time.Hour, 7 * time.Hour, true},
		{" 9:30 - 17:05 ", 9*time.Hour + 30*time.Minute, 17*time.Hour + 5*time.Minute, true},
		{"00:00-23:59", 0, 23*time.Hour + 59*time.Minute, true},
		{"07:00-07:00", 0, 0, false},
		{"22:00", 0, 0, false},
		{"25:00-07:00", 0, 0, false},
		{"22:00-7pm", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, c := range cases {
		from, to, err := chatprefs.ParseQuiet(c.in)
		if (err == nil) != c.ok || from != c.from || to != c.to {
			t.Errorf("ParseQuiet(%q) = %s, %s, %v; want %s, %s, ok %t", c.in, from, to, err, c.from, c.to, c.ok)
		}
	}
}

func FuzzParseQuiet(f *testing.F) {
	for _, s := range []string{"22:00-07:00", "9:30-17:05", "07:00-07:00", "-", "24:00-00:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		from, to, err := chatprefs.ParseQuiet(s)
		if err != nil {
			return
		}
		if from < 0 || from >= 24*time.Hour || to < 0 || to >= 24*time.Hour || from == to {
			t.Errorf("ParseQuiet(%q) = %s, %s: outside a day or empty", s, from, to)
		}
	})
}

// A chat's settings are stored as they were before this package owned
// them: one JSON object under prefs/<address>, so settings written by an
// earlier herald read the same, and the other way round.
func TestStore_StoredFormatIsUnchanged(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	ps := &chatprefs.Store{KV: st.Channels()}
	until := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if err := ps.Update(ctx, "telegram:chat:42", func(p *chatprefs.Prefs) {
		*p = chatprefs.Prefs{Quiet: "22:00-07:00", Zone: "Asia/Shanghai", Mutes: map[string]time.Time{"t1": until}, Lang: "zh"}
	}); err != nil {
		t.Fatal(err)
	}
	want := `{"quiet":"22:00-07:00","zone":"Asia/Shanghai","mutes":{"t1":"2026-12-01T10:00:00Z"},"lang":"zh"}`
	got, err := st.Channels().Get(ctx, "prefs/telegram:chat:42")
	if err != nil || !bytes.Equal(got, []byte(want)) {
		t.Errorf("stored %s (%v), want %s", got, err, want)
	}

	if err := st.Channels().Put(ctx, "prefs/feishu:chat:oc_1", []byte(`{"quiet":"12:00-13:30","lang":"en"}`), 0); err != nil {
		t.Fatal(err)
	}
	p, err := ps.Get(ctx, "feishu:chat:oc_1")
	if err != nil || p.Quiet != "12:00-13:30" || p.Lang != "en" || p.Zone != "" || p.Mutes != nil {
		t.Errorf("read %+v (%v), want the quiet hours and language stored", p, err)
	}
}

// A forum topic has its group's settings: the group's quiet hours and
// mutes hold the topic's notices too.
func TestStore_ForumTopicSharesItsGroupsPrefs(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ps := &chatprefs.Store{KV: st.Channels(), Zone: time.UTC}
	ctx := context.Background()
	if err := ps.Update(ctx, "telegram:chat:-100", func(p *chatprefs.Prefs) { p.Quiet, p.Lang = "22:00-07:00", "zh" }); err != nil {
		t.Fatal(err)
	}
	p, err := ps.Get(ctx, "telegram:chat:-100:topic:7")
	if err != nil || p.Quiet != "22:00-07:00" || ps.Lang("telegram:chat:-100:topic:7") != "zh" {
		t.Errorf("the topic's prefs = %+v, %v; want the group's", p, err)
	}
}
