package scheduler

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/tasks"
)

// A baseline is confirmed with at most one short message (I2), sent
// where the task's notices go. When many tasks are owed their first run
// as scheduling starts (a big config file, a first start), their
// confirmations are collapsed: one message per recipient for the whole
// start-up ("Now watching 1,000 sources"), never one per task.
//
// watching tracks the tasks owed a baseline when the loop planned them,
// by recipient; a recipient expecting only one of them gets that task's
// own confirmation, as a task created later does.
type watching struct {
	mu    sync.Mutex
	tasks map[string][]string   // task id → its recipients, still expected
	notes map[string]*watchNote // recipient → what its message will say
}

type watchNote struct {
	left    int // tasks of this recipient still to run
	sources int
	items   int
	lang    string // the first task's owner's language
	name    string // the first task's, for a message about one
}

func newWatching() *watching {
	return &watching{tasks: map[string][]string{}, notes: map[string]*watchNote{}}
}

// expect notes tasks owed their first run at planning; tasks already
// expected are left as they are.
func (w *watching) expect(ts []*tasks.Task) {
	w.mu.Lock()
	defer w.mu.Unlock()
	per := map[string][]*tasks.Task{}
	for _, t := range ts {
		if _, ok := w.tasks[t.ID]; ok {
			continue
		}
		for _, r := range t.Notify {
			per[r] = append(per[r], t)
		}
	}
	for r, rts := range per {
		n := w.notes[r]
		if n == nil && len(rts) < 2 {
			continue // one task: its own confirmation
		}
		if n == nil {
			n = &watchNote{}
			w.notes[r] = n
		}
		for _, t := range rts {
			n.left++
			w.tasks[t.ID] = append(w.tasks[t.ID], r)
		}
	}
}

// collapsed reports whether task id's confirmation goes into a collapsed
// message rather than its own.
func (w *watching) collapsed(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.tasks[id]
	return ok
}

// done records that task id ran (its baseline committed with items, or
// not: baseline false). It returns the recipients whose messages are
// complete, each taken out.
func (w *watching) done(t *tasks.Task, baseline bool, items int, lang func() string) map[string]watchNote {
	w.mu.Lock()
	defer w.mu.Unlock()
	rs, ok := w.tasks[t.ID]
	if !ok {
		return nil
	}
	delete(w.tasks, t.ID)
	if len(w.tasks) == 0 {
		w.tasks = map[string][]string{} // a map keeps its size: let the start-up's go
	}
	var ready map[string]watchNote
	for _, r := range rs {
		n := w.notes[r]
		n.left--
		if baseline {
			n.sources++
			n.items += items
			if n.sources == 1 {
				n.lang, n.name = lang(), t.DisplayName()
			}
		}
		if n.left == 0 {
			if ready == nil {
				ready = map[string]watchNote{}
			}
			ready[r] = *n
			delete(w.notes, r)
		}
	}
	return ready
}

// flush takes out every message begun, complete or not (scheduling stops:
// tasks still to run are expected again at the next start).
func (w *watching) flush() map[string]watchNote {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]watchNote{}
	for r, n := range w.notes {
		out[r] = *n
	}
	w.tasks, w.notes = map[string][]string{}, map[string]*watchNote{}
	return out
}

// baselines is the Scheduler's Baselines.
type baselines struct{ s *Scheduler }

func (b baselines) Collapsed(id string) bool { return b.s.watching.collapsed(id) }

func (b baselines) Done(ctx context.Context, t *tasks.Task, baseline bool, items int) {
	b.s.baselineDone(ctx, t, baseline, items)
}

// baselineDone reports a task's first run to the collapsed confirmations
// and sends those now complete.
func (s *Scheduler) baselineDone(ctx context.Context, t *tasks.Task, baseline bool, items int) {
	s.sendWatching(ctx, s.watching.done(t, baseline, items, func() string { return tasks.OwnerLang(ctx, s.store, t) }))
}

// sendWatching admits one "now watching" message per recipient. Its key
// is new at each start-up: the same recipient hears once per start-up.
func (s *Scheduler) sendWatching(ctx context.Context, notes map[string]watchNote) {
	for r, n := range notes {
		if n.sources == 0 {
			continue
		}
		title, text := tasks.NoticeIn(tasks.NoticeWatchingMany, n.lang, grouped(n.sources), grouped(n.items))
		if n.sources == 1 {
			title, text = tasks.NoticeIn(tasks.NoticeBaseline, n.lang, n.name, n.items)
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, err := s.o.Admit.Admit(actx, delivery.Admission{Source: WatchingSource, Identity: "watching|" + s.o.Holder + "|" + tasks.RandomID(8),
			Recipients: []string{r}, Message: delivery.Message{Kind: delivery.KindState, Title: title, Text: text}})
		cancel()
		if err != nil {
			s.log.Warn().Err(err).Int("sources", n.sources).Msg("cannot admit the collapsed baseline confirmation")
		}
	}
}

// WatchingSource is the ledger source of collapsed baseline confirmations.
const WatchingSource = "tasks:watching"

// grouped writes n with thousands separators: 1,000.
func grouped(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
