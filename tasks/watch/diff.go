package watch

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// EventKind names what happened to an item.
type EventKind string

// Event kinds, in the order a Diff lists them.
const (
	EventNew      EventKind = "new"
	EventChanged  EventKind = "changed"
	EventRemoved  EventKind = "removed"
	EventDeadline EventKind = "deadline"
)

func (k EventKind) rank() int {
	switch k {
	case EventNew:
		return 0
	case EventChanged:
		return 1
	case EventRemoved:
		return 2
	default:
		return 3
	}
}

// Event is one actionable change. Identity is stable: the same change seen
// again yields the same identity, so the effect key derived from it lets the
// ledger refuse a second claim (I1).
type Event struct {
	Kind     EventKind
	Item     Item
	Offset   time.Duration // deadline: which remind-before offset
	Identity string        // "new|<id>|<digest>", "changed|<id>|<digest>", "removed|<id>|<digest>", "deadline|<id>|<due unix>|<offset>"
	// WasTitle and WasDue say what a changed item was before, from the
	// snapshot entry (or tombstone) it replaces, so a notice can show what
	// moved. Each is set only when it differs from the item's own; they
	// are not part of Identity.
	WasTitle string
	WasDue   time.Time
	// Added and Removed are the lines a changed page or JSON item gained
	// and lost (at most DiffMaxLines each), when the entry it replaces
	// recorded its lines; not part of Identity.
	Added, Removed []string
}

// changedEvent is the changed event of item it under key, replacing the
// recorded entry p.
func changedEvent(key string, it Item, p Entry) Event {
	ev := Event{Kind: EventChanged, Item: it, Identity: itemIdentity(EventChanged, key, it.Digest)}
	if p.Title != it.Title {
		ev.WasTitle = p.Title
	}
	if !p.Due.Equal(it.Due) {
		ev.WasDue = p.Due
	}
	if len(p.Lines) > 0 && len(it.Lines) > 0 {
		ev.Added, ev.Removed = lineDiff(p.Lines, it.Lines)
	}
	return ev
}

// Default bounds applied when Options leaves them zero.
const (
	DefaultMaxEvents  = 100 // I7: events acted on per run
	DefaultSuspectMin = 20
)

// Options tune Compute and Reminders.
type Options struct {
	RemindBefore     []time.Duration // e.g. 72h, 24h, 2h; non-positive offsets are ignored
	Include, Exclude []string        // case-insensitive keywords on title and URL for item events; empty Include = all
	MaxEvents        int             // I7: act on at most this many events (default 100); the rest are deferred, never dropped
	SuspectMin       int             // default 20: the suspect rule applies when the previous snapshot had at least this many items
}

func (o Options) normalized() Options {
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.SuspectMin <= 0 {
		o.SuspectMin = DefaultSuspectMin
	}
	var offs []time.Duration
	for _, d := range o.RemindBefore {
		if d > 0 {
			offs = append(offs, d)
		}
	}
	slices.Sort(offs)
	o.RemindBefore = slices.Compact(offs)
	return o
}

// Counts tallies what a run detected. New, Changed, Removed and Deadline
// count actionable events, returned and deferred alike; Filtered counts
// item events the filters silenced; Lapsed counts items that left the
// source after their due time, and Continued occurrences of a known
// recurring series that came into view: neither is news.
type Counts struct{ New, Changed, Removed, Deadline, Filtered, Lapsed, Continued int }

// Diff is the outcome of comparing a fetch (or a reminder wake-up) with
// the previous snapshot.
type Diff struct {
	Events   []Event // at most MaxEvents: new, changed, removed, deadline; each kind by identity
	Deferred int     // actionable events left for the next run (I7)
	Baseline bool    // first successful run (I2): no item events, Next holds every item
	Suspect  bool    // too many of the previous items changed at once: no events, Next == prev
	Counts   Counts
	// Next is the snapshot to commit together with the claims for Events.
	// It records only the returned events plus silent updates, so deferred
	// events are detected again next run. Its Validators are prev's: the
	// caller sets the ones of the fetch it committed.
	Next *Snapshot
}

// candidate is a detected event and what returning it records in Next.
type candidate struct {
	ev    Event
	apply func(*Snapshot)
}

// take sorts cs, applies the first n to next and returns their events and
// how many were left over.
func take(cs []candidate, n int, next *Snapshot) ([]Event, int) {
	slices.SortFunc(cs, func(a, b candidate) int {
		if c := cmp.Compare(a.ev.Kind.rank(), b.ev.Kind.rank()); c != 0 {
			return c
		}
		return strings.Compare(a.ev.Identity, b.ev.Identity)
	})
	n = max(0, min(n, len(cs)))
	evs := make([]Event, 0, n)
	for _, c := range cs[:n] {
		c.apply(next)
		evs = append(evs, c.ev)
	}
	return evs, len(cs) - n
}

func itemIdentity(k EventKind, id, digest string) string {
	return string(k) + "|" + id + "|" + digest
}

// keyed is an incoming item under the identity the snapshot files it by.
type keyed struct {
	key string
	it  Item
}

// keyItems files items by ID, falling back to the first non-empty Alt when
// the ID is empty; items with neither are skipped, and of items sharing a
// key the first wins.
func keyItems(items []Item) []keyed {
	out := make([]keyed, 0, len(items))
	seen := make(map[string]struct{}, len(items))
	for _, it := range items {
		k := it.ID
		for _, a := range it.Alt {
			if k != "" {
				break
			}
			k = a
		}
		if k == "" {
			continue
		}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, keyed{key: k, it: it})
	}
	return out
}

// altIndex maps every identity of the entries in m (key and Alt) to their
// keys, in key order.
func altIndex(m map[string]Entry, skip map[string]bool) map[string][]string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	idx := make(map[string][]string)
	for _, k := range keys {
		idx[k] = append(idx[k], k)
		for _, a := range m[k].Alt {
			if a != "" && a != k {
				idx[a] = append(idx[a], k)
			}
		}
	}
	return idx
}

// matchAlt returns the first unclaimed key in idx under any identity of in.
func matchAlt(idx map[string][]string, in keyed, claimed map[string]bool) (string, bool) {
	try := func(id string) (string, bool) {
		for _, k := range idx[id] {
			if !claimed[k] {
				return k, true
			}
		}
		return "", false
	}
	if k, ok := try(in.key); ok {
		return k, true
	}
	for _, a := range in.it.Alt {
		if a == "" {
			continue
		}
		if k, ok := try(a); ok {
			return k, true
		}
	}
	return "", false
}

// newSeries maps each recurring series with new occurrences in this fetch
// to the one occurrence worth reporting: the earliest new one of a series
// the previous snapshot does not know, none ("") of a known series.
func newSeries(prev *Snapshot, in []keyed, matched []string) map[string]string {
	var out map[string]string
	var due map[string]time.Time
	for i, k := range in {
		s := k.it.Series
		if s == "" || matched[i] != "" {
			continue
		}
		if out == nil {
			out, due = map[string]string{}, map[string]time.Time{}
			for _, e := range prev.Items {
				if e.Series != "" {
					out[e.Series] = ""
				}
			}
			for _, e := range prev.Tombstones {
				if e.Series != "" {
					out[e.Series] = ""
				}
			}
		}
		first, seen := out[s]
		switch {
		case !seen, first != "" && k.it.Due.Before(due[s]):
			out[s], due[s] = k.key, k.it.Due
		}
	}
	return out
}

// Compute compares a fetch's items with the previous snapshot at now.
//
// Without a baselined prev it is the baseline run (I2): no new, changed or
// removed events, Next holds every item; deadline events are still
// computed, so an item already inside a reminder window gets the one
// reminder for its nearest passed offset (someone adding a calendar the day
// before a deadline expects to hear about it once).
//
// Items are matched by ID, then by their Alt identities against a previous
// entry's ID or Alt (guid churn: the same item, re-keyed silently), then
// against tombstones (a restored item with the same digest is not new; with
// another digest it is changed). A matched item whose digest differs is
// changed; an unmatched previous item is removed, unless its due time has
// passed: calendars and course sites drop past deadlines (and expanded
// recurring series move their window on), so such an item lapses quietly
// into the tombstones, with no event and no weight in the suspect rule.
//
// When prev held at least SuspectMin items and more than half of them are
// changed or removed at once, the run is Suspect: no events and Next is
// prev itself. A run that lists nothing while items it knew are still
// current is Suspect at any size: an empty document after a good one is
// far likelier a broken page than every entry withdrawn. New items alone never make a run suspect: a growing feed
// (or events deferred by I7) is normal, while a source that dropped or
// re-keyed its items shows up as removals.
//
// Occurrences of a recurring series (Item.Series) come into view as the
// calendar's window moves on: a series already known continues quietly
// (its occurrences still get their reminders), and of a series seen for
// the first time only the earliest new occurrence is reported.
//
// Filters silence new, changed and removed events; the silenced changes
// are still recorded in Next so they never fire later. Deadline events are
// not filtered. At most MaxEvents events are returned; the rest are left
// out of Next and found again next run. Compute never modifies prev.
func Compute(prev *Snapshot, items []Item, now time.Time, o Options) Diff {
	o = o.normalized()
	in := keyItems(items)
	if prev == nil || !prev.Baselined {
		next := newSnapshot(prev, len(in))
		for _, k := range in {
			next.Items[k.key] = entryOf(k.it)
		}
		d := Diff{Baseline: true, Next: next}
		d.remind(next, now, o, o.MaxEvents, nil)
		next.settle()
		return d
	}

	f := newFilter(o.Include, o.Exclude)
	next := newSnapshot(prev, len(in))

	// Match incoming items to previous entries: by ID, then by Alt.
	matched := make([]string, len(in)) // previous key per incoming item, "" if none
	claimed := make(map[string]bool, len(prev.Items))
	unmatched := 0
	for i, k := range in {
		if _, ok := prev.Items[k.key]; ok {
			matched[i], claimed[k.key] = k.key, true
		} else {
			unmatched++
		}
	}
	if unmatched > 0 && len(claimed) < len(prev.Items) {
		idx := altIndex(prev.Items, claimed)
		for i, k := range in {
			if matched[i] != "" {
				continue
			}
			if pk, ok := matchAlt(idx, k, claimed); ok {
				matched[i], claimed[pk] = pk, true
				unmatched--
			}
		}
	}

	// Suspect: too much of what we knew changed at once.
	changedPrev := 0
	for i, k := range in {
		if pk := matched[i]; pk != "" && prev.Items[pk].Digest != k.it.Digest {
			changedPrev++
		}
	}
	lapsed := func(p Entry) bool { return !p.Due.IsZero() && p.Due.Before(now) }
	removedPrev, lapsedPrev := 0, 0
	for pk, p := range prev.Items {
		switch {
		case claimed[pk]:
		case lapsed(p):
			lapsedPrev++
		default:
			removedPrev++
		}
	}
	if len(prev.Items) >= o.SuspectMin && 2*(changedPrev+removedPrev) > len(prev.Items) || len(in) == 0 && removedPrev > 0 {
		d := Diff{Suspect: true, Next: prev}
		d.Counts.Changed, d.Counts.Removed = changedPrev, removedPrev
		for i := range in {
			if matched[i] == "" {
				d.Counts.New++
			}
		}
		return d
	}

	series := newSeries(prev, in, matched)
	var (
		d       = Diff{Next: next}
		cs      []candidate
		leaving = map[string]bool{} // keys whose removal is pending: no reminders
		tidx    map[string][]string
		tclaim  = map[string]bool{}
	)
	for i, k := range in {
		key, it := k.key, k.it
		if pk := matched[i]; pk != "" {
			p := prev.Items[pk]
			e := mergeEntry(p, it)
			switch {
			case p.Digest == it.Digest:
				next.Items[key] = e // unchanged, or silently re-keyed
			case !f.allows(it.Title, it.URL):
				next.Items[key] = e
				d.Counts.Filtered++
			default:
				changed := e
				e.Digest, e.Lines = p.Digest, p.Lines // the change is recorded only if returned
				next.Items[key] = e
				d.Counts.Changed++
				cs = append(cs, candidate{
					ev: changedEvent(key, it, p),
					apply: func(s *Snapshot) {
						s.Items[key] = changed
					},
				})
			}
			continue
		}

		// Not a current item: a restored one, or new.
		tk, restored := "", false
		if _, ok := prev.Tombstones[key]; ok && !tclaim[key] {
			tk, restored = key, true
		} else if len(prev.Tombstones) > 0 {
			if tidx == nil {
				tidx = altIndex(prev.Tombstones, nil)
			}
			tk, restored = matchAlt(tidx, k, tclaim)
		}
		if restored {
			tclaim[tk] = true
			t := prev.Tombstones[tk]
			t.Removed = time.Time{}
			e := mergeEntry(t, it)
			switch {
			case t.Digest == it.Digest, !f.allows(it.Title, it.URL):
				if t.Digest != it.Digest {
					d.Counts.Filtered++
				}
				delete(next.Tombstones, tk)
				next.Items[key] = e
			default:
				d.Counts.Changed++
				cs = append(cs, candidate{
					ev: changedEvent(key, it, t),
					apply: func(s *Snapshot) {
						delete(s.Tombstones, tk)
						s.Items[key] = e
					},
				})
			}
			continue
		}

		e := entryOf(it)
		if !f.allows(it.Title, it.URL) {
			next.Items[key] = e
			d.Counts.Filtered++
			continue
		}
		if it.Series != "" && series[it.Series] != key {
			next.Items[key] = e
			d.Counts.Continued++
			continue
		}
		d.Counts.New++
		cs = append(cs, candidate{
			ev:    Event{Kind: EventNew, Item: it, Identity: itemIdentity(EventNew, key, it.Digest)},
			apply: func(s *Snapshot) { s.Items[key] = e },
		})
	}

	// Previous items no longer listed.
	if removedPrev+lapsedPrev > 0 {
		for pk, p := range prev.Items {
			if claimed[pk] {
				continue
			}
			gone := p
			gone.Removed = now
			if lapsed(p) {
				next.Tombstones[pk] = gone
				d.Counts.Lapsed++
				continue
			}
			if !f.allows(p.Title, p.URL) {
				next.Tombstones[pk] = gone
				d.Counts.Filtered++
				continue
			}
			next.Items[pk] = p // kept until the removal is returned
			leaving[pk] = true
			d.Counts.Removed++
			cs = append(cs, candidate{
				ev: Event{Kind: EventRemoved, Item: itemOf(pk, p), Identity: itemIdentity(EventRemoved, pk, p.Digest)},
				apply: func(s *Snapshot) {
					delete(s.Items, pk)
					s.Tombstones[pk] = gone
				},
			})
		}
	}

	var left int
	d.Events, left = take(cs, o.MaxEvents, next)
	for k := range leaving {
		if _, still := next.Items[k]; !still {
			delete(leaving, k)
		}
	}
	d.Deferred += left
	d.remind(next, now, o, o.MaxEvents-len(d.Events), leaving)
	next.settle()
	return d
}

// Rebaseline accepts items as the new baseline after the owner confirmed a
// suspect run: no events. Reminder history carries over for items whose
// due time is unchanged, and previous items not listed any more become
// tombstones.
func Rebaseline(prev *Snapshot, items []Item, now time.Time) *Snapshot {
	in := keyItems(items)
	next := newSnapshot(prev, len(in))
	for _, k := range in {
		if prev != nil {
			if p, ok := prev.Items[k.key]; ok {
				next.Items[k.key] = mergeEntry(p, k.it)
				continue
			}
		}
		next.Items[k.key] = entryOf(k.it)
	}
	if prev != nil {
		for pk, p := range prev.Items {
			if _, ok := next.Items[pk]; !ok {
				p.Removed = now
				next.Tombstones[pk] = p
			}
		}
	}
	next.settle()
	return next
}
