package watch

import (
	"slices"
	"strconv"
	"time"
)

// Reminder rules (docs/sources.md, What counts as news), applied to every current entry with a due time
// that is not done:
//
//   - offset o's reminder instant is Due-o; it is due once now reaches it;
//   - when several offsets are past and not yet emitted for this Due, only
//     the nearest (smallest offset) is emitted, and all passed offsets are
//     marked so none of them fires later;
//   - nothing is emitted at or after Due;
//   - a changed Due resets the history (mergeEntry), so its reminders are
//     new events with new identities;
//   - done and removed items get no more reminders.

// Reminders computes the deadline events due at a reminder wake-up,
// without a fetch. Next is a copy of s with the returned reminders marked;
// a nil s yields an empty Diff.
func Reminders(s *Snapshot, now time.Time, o Options) Diff {
	if s == nil {
		return Diff{}
	}
	o = o.normalized()
	next := s.clone()
	d := Diff{Next: next}
	d.remind(next, now, o, o.MaxEvents, nil)
	return d
}

// NextWake returns the earliest instant at which s has a reminder to emit,
// and false when there is none. It is normally a future due-offset
// instant; it is at or before now when a reminder is already due but not
// yet emitted (the service was down at its instant, the check that would
// have sent it failed, or the event bound deferred it): the caller should
// then wake at once. An instant it reports always yields an event from
// Reminders, so waking for it cannot spin.
func NextWake(s *Snapshot, now time.Time, o Options) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	o = o.normalized()
	var (
		best  time.Time
		found bool
	)
	consider := func(at time.Time) {
		if !found || at.Before(best) {
			best, found = at, true
		}
	}
	for _, e := range s.Items {
		if e.Done || e.Due.IsZero() || !now.Before(e.Due) {
			continue
		}
		if passed := passedOffsets(e.Due, now, o.RemindBefore); len(passed) > 0 && !slices.Contains(e.Reminded, passed[0]) {
			consider(e.Due.Add(-passed[0])) // due now
		}
		for _, off := range o.RemindBefore {
			if at := e.Due.Add(-off); at.After(now) && !slices.Contains(e.Reminded, off) {
				consider(at)
			}
		}
	}
	return best, found
}

// remind adds the deadline events due at now for next's entries to d,
// returning at most room of them, marking those in next, and counting the
// rest as deferred. Keys in skip are leaving and get none.
func (d *Diff) remind(next *Snapshot, now time.Time, o Options, room int, skip map[string]bool) {
	if len(o.RemindBefore) == 0 {
		return
	}
	var cs []candidate
	for key, e := range next.Items {
		if skip[key] || e.Done || e.Due.IsZero() || !now.Before(e.Due) {
			continue
		}
		passed := passedOffsets(e.Due, now, o.RemindBefore)
		if len(passed) == 0 {
			continue
		}
		marked := union(e.Reminded, passed)
		nearest := passed[0]
		if slices.Contains(e.Reminded, nearest) {
			// Already reminded at the nearest offset: any larger offset that
			// passed since is marked silently, never sent late.
			if len(marked) != len(e.Reminded) {
				e.Reminded = marked
				next.Items[key] = e
			}
			continue
		}
		d.Counts.Deadline++
		cs = append(cs, candidate{
			ev: Event{
				Kind:     EventDeadline,
				Item:     itemOf(key, e),
				Offset:   nearest,
				Identity: deadlineIdentity(key, e.Due, nearest),
			},
			apply: func(s *Snapshot) {
				x := s.Items[key]
				x.Reminded = marked
				s.Items[key] = x
			},
		})
	}
	evs, left := take(cs, room, next)
	d.Events = append(d.Events, evs...)
	d.Deferred += left
}

func deadlineIdentity(id string, due time.Time, off time.Duration) string {
	return "deadline|" + id + "|" + strconv.FormatInt(due.Unix(), 10) + "|" + off.String()
}

// passedOffsets returns the offsets (ascending, from the ascending offs)
// whose reminder instant due-o is at or before now.
func passedOffsets(due, now time.Time, offs []time.Duration) []time.Duration {
	left := due.Sub(now)
	i, _ := slices.BinarySearch(offs, left)
	return offs[i:]
}

// union returns the sorted union of a and b as a new slice.
func union(a, b []time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	return slices.Compact(out)
}
