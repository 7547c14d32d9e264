package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

func TestPrefStoreHold(t *testing.T) {
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
		prefs  delivery.Prefs
		task   string
		urgent time.Time
		now    time.Time
		held   bool
		until  time.Time
	}{
		{name: "no prefs", now: at("2026-11-30T23:00:00Z")},
		{name: "inside a window across midnight, evening", prefs: delivery.Prefs{Quiet: "22:00-07:00"},
			now: at("2026-11-30T23:00:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "inside a window across midnight, morning", prefs: delivery.Prefs{Quiet: "22:00-07:00"},
			now: at("2026-12-01T06:59:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "the window's end is outside it", prefs: delivery.Prefs{Quiet: "22:00-07:00"}, now: at("2026-12-01T07:00:00Z")},
		{name: "the window's start is inside it", prefs: delivery.Prefs{Quiet: "22:00-07:00"},
			now: at("2026-11-30T22:00:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "daytime window", prefs: delivery.Prefs{Quiet: "12:00-13:30"},
			now: at("2026-11-30T12:10:00Z"), held: true, until: at("2026-11-30T13:30:00Z")},
		{name: "outside a daytime window", prefs: delivery.Prefs{Quiet: "12:00-13:30"}, now: at("2026-11-30T14:00:00Z")},
		{name: "the chat's zone", prefs: delivery.Prefs{Quiet: "22:00-07:00", Zone: "Asia/Shanghai"},
			now: at("2026-11-30T15:00:00Z"), held: true, until: time.Date(2026, 12, 1, 7, 0, 0, 0, shanghai)},
		{name: "urgent deadline passes", prefs: delivery.Prefs{Quiet: "22:00-07:00"},
			urgent: at("2026-12-01T01:00:00Z"), now: at("2026-11-30T23:00:00Z")},
		{name: "later deadline held until urgent", prefs: delivery.Prefs{Quiet: "22:00-07:00"},
			urgent: at("2026-12-01T04:00:00Z"), now: at("2026-11-30T23:00:00Z"), held: true, until: at("2026-12-01T02:00:00Z")},
		{name: "deadline after the window", prefs: delivery.Prefs{Quiet: "22:00-07:00"},
			urgent: at("2026-12-01T12:00:00Z"), now: at("2026-11-30T23:00:00Z"), held: true, until: at("2026-12-01T07:00:00Z")},
		{name: "muted task", prefs: delivery.Prefs{Mutes: map[string]time.Time{"t1": at("2026-12-01T10:00:00Z")}},
			task: "t1", now: at("2026-11-30T15:00:00Z"), held: true, until: at("2026-12-01T10:00:00Z")},
		{name: "mute holds even an urgent deadline", prefs: delivery.Prefs{Mutes: map[string]time.Time{"t1": at("2026-12-01T10:00:00Z")}},
			task: "t1", urgent: at("2026-11-30T15:30:00Z"), now: at("2026-11-30T15:00:00Z"), held: true, until: at("2026-12-01T10:00:00Z")},
		{name: "another task is not muted", prefs: delivery.Prefs{Mutes: map[string]time.Time{"t1": at("2026-12-01T10:00:00Z")}},
			task: "t2", now: at("2026-11-30T15:00:00Z")},
		{name: "a mute that ended", prefs: delivery.Prefs{Mutes: map[string]time.Time{"t1": at("2026-11-30T10:00:00Z")}},
			task: "t1", now: at("2026-11-30T15:00:00Z")},
		{name: "unparseable quiet hours hold nothing", prefs: delivery.Prefs{Quiet: "late"}, now: at("2026-11-30T23:00:00Z")},
	}
	r := newRig(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			address := "telegram:chat:" + c.name
			ps := r.prefs()
			if err := ps.Update(context.Background(), address, func(p *delivery.Prefs) { *p = c.prefs }); err != nil {
				t.Fatal(err)
			}
			until, held := ps.Hold(context.Background(), address, c.task, c.urgent, c.now)
			if held != c.held || !until.Equal(c.until) {
				t.Errorf("Hold = %s, %t; want %s, %t", until, held, c.until, c.held)
			}
		})
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
		from, to, err := delivery.ParseQuiet(c.in)
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
		from, to, err := delivery.ParseQuiet(s)
		if err != nil {
			return
		}
		if from < 0 || from >= 24*time.Hour || to < 0 || to >= 24*time.Hour || from == to {
			t.Errorf("ParseQuiet(%q) = %s, %s: outside a day or empty", s, from, to)
		}
	})
}

// Only chats set preferences, so a named recipient or an inbox is never
// held and costs no store read on the delivery path.
func TestPrefStoreHold_OnlyChatsHavePrefs(t *testing.T) {
	kv := &countingKV{}
	ps := &delivery.PrefStore{KV: kv, Zone: time.UTC}
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
