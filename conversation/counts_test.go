package conversation

import "testing"

// TestOneItemIsSingular: a source with one item is checked and shown as
// "1 item" in English; Chinese has no plural and keeps its
// wording; more items stay plural.
func TestOneItemIsSingular(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.startManager()
	r.src.mu.Lock()
	r.src.items = items(1)
	r.src.mu.Unlock()
	tk := r.submit(bob, "https://news.example.edu/feed.xml")

	got := r.say(bob, "/run "+tk.ID)
	contains(t, got, "Checked "+tk.ID, "1 item")
	excludes(t, got, "1 items")
	contains(t, r.sayZh(bob, "/run "+tk.ID), "共 1 条")
	got = r.say(bob, "/task "+tk.ID)
	contains(t, got, " — 1 item, 0 new, 0 changed")
	excludes(t, got, "1 items")

	r.src.mu.Lock()
	r.src.items = items(2)
	r.src.mu.Unlock()
	contains(t, r.say(bob, "/run "+tk.ID), "2 items")
}
