package delivery_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/delivery/inbox"
	"github.com/herald-bridge/herald/store"
)

// item is one item of a notice with its change.
func item(id, title, change, was string) delivery.Item {
	return delivery.Item{ID: id, Title: title, Change: change, WasTitle: was, URL: "https://news.example.edu/" + id}
}

// notice is a one-item watch notice of task t-news.
func notice(it delivery.Item) delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskID: "t-news", TaskName: "News", Items: []delivery.Item{it}}
}

// TestHeldDigestSaysWhatIsNewToTheRecipient: pushes held by quiet hours
// go out as one message that says what is new to that recipient, who was
// told nothing while they were held: an item added and then renamed is
// new, with its latest title and no "was"; one changed twice says its
// latest title and what the recipient last knew; one added and then
// removed is not shown at all, and when nothing else is left no message
// goes out — every push still ends, with the collapsed message's fate.
func TestHeldDigestSaysWhatIsNewToTheRecipient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []delivery.Item
		want   []delivery.Item // nil: no message at all
	}{
		{name: "added then renamed",
			events: []delivery.Item{item("essay", "Essay draft due", delivery.ChangeNew, ""),
				item("essay", "Essay final due", delivery.ChangeChanged, "Essay draft due")},
			want: []delivery.Item{item("essay", "Essay final due", delivery.ChangeNew, "")}},
		{name: "changed twice",
			events: []delivery.Item{item("exam", "Exam in B202", delivery.ChangeChanged, "Exam in A101"),
				item("exam", "Exam in C303", delivery.ChangeChanged, "Exam in B202")},
			want: []delivery.Item{item("exam", "Exam in C303", delivery.ChangeChanged, "Exam in A101")}},
		{name: "added and removed beside another",
			events: []delivery.Item{item("talk", "Guest talk", delivery.ChangeNew, ""),
				item("lab", "Lab open", delivery.ChangeNew, ""),
				item("talk", "Guest talk", delivery.ChangeRemoved, "")},
			want: []delivery.Item{item("lab", "Lab open", delivery.ChangeNew, "")}},
		{name: "added and removed alone",
			events: []delivery.Item{item("talk", "Guest talk", delivery.ChangeNew, ""),
				item("talk", "Guest talk", delivery.ChangeRemoved, "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			box := inbox.New(r.st.Inbox())
			route := delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.InboxAddr: box}})
			r.setPrefs("console:ann", func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
			r.start(route, "w", withHolds(r.prefs()))
			var keys []string
			for i, ev := range tc.events {
				if i > 0 {
					r.advance(time.Minute)
				}
				k := r.admit("t-news", ev.ID+"@"+ev.Change+ev.Title, "inbox:console:ann", notice(ev), 0)
				waitFor(t, func() bool { return r.effect(k).NotBefore.Equal(nextMorning) }, "event %d to be held", i)
				keys = append(keys, k)
			}
			r.advance(nextMorning.Sub(r.clock.Now()))
			for _, k := range keys {
				r.settled(k, store.Completed)
			}
			items, err := r.st.Inbox().List(context.Background(), "console:ann", store.InboxQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(items) != 0 {
					t.Fatalf("%d inbox items for an item that came and went while held, want none", len(items))
				}
				return
			}
			if len(items) != 1 {
				t.Fatalf("%d inbox items, want one collapsed message", len(items))
			}
			var got delivery.Message
			if err := json.Unmarshal(items[0].Body, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Items) != len(tc.want) {
				t.Fatalf("message lists %+v, want %+v", got.Items, tc.want)
			}
			for i, w := range tc.want {
				g := got.Items[i]
				if g.ID != w.ID || g.Title != w.Title || g.Change != w.Change || g.WasTitle != w.WasTitle {
					t.Errorf("item %d is %s %q (was %q), want %s %q (was %q)", i, g.Change, g.Title, g.WasTitle, w.Change, w.Title, w.WasTitle)
				}
			}
		})
	}
}
