package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store"
)

func TestPrefHolds(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name   string
		prefs  chatprefs.Prefs
		task   string
		urgent time.Time
		now    time.Time
		held   bool
		until  time.Time
	}{
		{name: "no prefs", now: at("2026-11-30T23:00:00Z")},
		{name: "inside a window across midnight, evening", prefs: chatprefs.Prefs{Quiet: "22:00-07:00"},
			now: at("2026-11-30T23:00:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "inside a window across midnight, morning", prefs: chatprefs.Prefs{Quiet: "22:00-07:00"},
			now: at("2026-12-01T06:59:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "the window's end is outside it", prefs: chatprefs.Prefs{Quiet: "22:00-07:00"}, now: at("2026-12-01T07:00:00Z")},
		{name: "the window's start is inside it", prefs: chatprefs.Prefs{Quiet: "22:00-07:00"},
			now: at("2026-11-30T22:00:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "daytime window", prefs: chatprefs.Prefs{Quiet: "12:00-13:30"},
			now: at("2026-11-30T12:10:00Z"), held: true, until: at("2026-11-30T13:30:00Z")},
		{name: "outside a daytime window", prefs: chatprefs.Prefs{Quiet: "12:00-13:30"}, now: at("2026-11-30T14:00:00Z")},
		{name: "the chat's zone", prefs: chatprefs.Prefs{Quiet: "22:00-07:00", Zone: "Asia/Shanghai"},
			now: at("2026-11-30T15:00:00Z"), held: true, until: time.Date(2026, 12, 1, 7, 0, 0, 0, shanghai)},
		{name: "urgent deadline passes", prefs: chatprefs.Prefs{Quiet: "22:00-07:00"},
			urgent: at("2026-12-01T01:00:00Z"), now: at("2026-11-30T23:00:00Z")},
		{name: "later deadline held until urgent", prefs: chatprefs.Prefs{Quiet: "22:00-07:00"},
			urgent: at("2026-12-01T04:00:00Z"), now: at("2026-11-30T23:00:00Z"), held: true, until: at("2026-12-01T02:00:00Z")},
		{name: "deadline after the window", prefs: chatprefs.Prefs{Quiet: "22:00-07:00"},
			urgent: at("2026-12-01T12:00:00Z"), now: at("2026-11-30T23:00:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "muted task", prefs: chatprefs.Prefs{Mutes: map[string]time.Time{"t1": at("2026-12-01T10:00:00Z")}},
			task: "t1", now: at("2026-11-30T15:00:00Z"), held: true, until: at("2026-12-01T10:00:00Z")},
		{name: "mute holds even an urgent deadline", prefs: chatprefs.Prefs{Mutes: map[string]time.Time{"t1": at("2026-12-01T10:00:00Z")}},
			task: "t1", urgent: at("2026-11-30T15:30:00Z"), now: at("2026-11-30T15:00:00Z"), held: true, until: at("2026-12-01T10:00:00Z")},
		{name: "another task is not muted", prefs: chatprefs.Prefs{Mutes: map[string]time.Time{"t1": at("2026-12-01T10:00:00Z")}},
			task: "t2", now: at("2026-11-30T15:00:00Z")},
		{name: "a mute that ended", prefs: chatprefs.Prefs{Mutes: map[string]time.Time{"t1": at("2026-11-30T10:00:00Z")}},
			task: "t1", now: at("2026-11-30T15:00:00Z")},
		{name: "unparseable quiet hours hold nothing", prefs: chatprefs.Prefs{Quiet: "late"}, now: at("2026-11-30T23:00:00Z")},
	}
	r := newRig(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			address := "telegram:chat:" + c.name
			ps := r.prefs()
			if err := ps.Update(context.Background(), address, func(p *chatprefs.Prefs) { *p = c.prefs }); err != nil {
				t.Fatal(err)
			}
			until, held := delivery.PrefHolds{Prefs: ps}.Hold(context.Background(), address, c.task, c.urgent, c.now)
			if held != c.held || !until.Equal(c.until) {
				t.Errorf("Hold = %s, %t; want %s, %t", until, held, c.until, c.held)
			}
		})
	}
}

// Only chats set preferences, so a named recipient or an inbox is never
// held and costs no store read on the delivery path.
func TestPrefHolds_OnlyChatsHavePrefs(t *testing.T) {
	kv := &countingKV{}
	ps := delivery.PrefHolds{Prefs: &chatprefs.Store{KV: kv, Zone: time.UTC}}
	now := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	for _, to := range []string{"bench-sink", "inbox:alice", "team-bot"} {
		if _, held := ps.Hold(context.Background(), to, "t1", time.Time{}, now); held {
			t.Errorf("%s held", to)
		}
	}
	if kv.gets != 0 {
		t.Errorf("%d store reads for recipients without prefs, want 0", kv.gets)
	}
	ps.Hold(context.Background(), "telegram:chat:42", "t1", time.Time{}, now)
	if kv.gets != 1 {
		t.Errorf("a chat's prefs were read %d times, want 1", kv.gets)
	}
}

type countingKV struct{ gets int }

func (k *countingKV) Get(context.Context, string) ([]byte, error) {
	k.gets++
	return nil, store.ErrNotFound
}
func (k *countingKV) Put(context.Context, string, []byte, time.Duration) error { return nil }
func (k *countingKV) Delete(context.Context, string) error                     { return nil }
