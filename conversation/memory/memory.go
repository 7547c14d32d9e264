package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store"
)

// Defaults and bounds (docs/chat.md, Memory).
const (
	DefaultRetention = 90 * 24 * time.Hour
	DefaultMaxTurns  = store.DefaultHistoryTurns
	// PageSize is how many hits one page of a search shows.
	PageSize = 10
	// MaxPage is the deepest page a search goes to.
	MaxPage = 100
	// MaxText bounds what is kept of one message and of one answer, in
	// characters.
	MaxText = 4000
	// batch is how many index candidates one store call returns.
	batch = 100
	// minPruneWait spaces the pruner's wake-ups: turns due within it go
	// together.
	minPruneWait = time.Minute
)

// ErrEmptyQuery reports a search with nothing to look for.
var ErrEmptyQuery = errors.New("memory: nothing to search for")

// Options configure a Keeper.
type Options struct {
	Store     store.History
	Retention time.Duration // default DefaultRetention
	MaxTurns  int           // default DefaultMaxTurns
	Now       func() time.Time
	Log       zerolog.Logger
}

func (o *Options) validate() error {
	if o.Store == nil {
		return errors.New("memory: Options.Store is required")
	}
	if o.Retention < 0 || o.MaxTurns < 0 {
		return errors.New("memory: negative bound")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Keeper records turns and answers searches. It is safe for concurrent
// use; several replicas may share one store.
type Keeper struct {
	st  store.History
	now func() time.Time
	log zerolog.Logger

	mu        sync.RWMutex
	retention time.Duration
	maxTurns  int
	changed   chan struct{} // the pruner re-plans when the bounds change
}

// New returns a Keeper.
func New(o Options) (*Keeper, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	k := &Keeper{st: o.Store, now: o.Now, log: o.Log, changed: make(chan struct{}, 1)}
	k.SetBounds(o.Retention, o.MaxTurns)
	return k, nil
}

// SetBounds changes retention and the turns kept per log (config reload);
// zero means the default.
func (k *Keeper) SetBounds(retention time.Duration, maxTurns int) {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	k.mu.Lock()
	k.retention, k.maxTurns = retention, maxTurns
	k.mu.Unlock()
	select {
	case k.changed <- struct{}{}:
	default:
	}
}

func (k *Keeper) bounds() (time.Duration, int) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.retention, k.maxTurns
}

// since is the retention cut-off now.
func (k *Keeper) since() time.Time {
	r, _ := k.bounds()
	return k.now().Add(-r)
}

// LogOf names the log a turn belongs to: a group chat's own log, else the
// principal's. A group's turns never go to a person's log, nor theirs to it.
func LogOf(principal, chat string, group bool) string {
	if group {
		return chat
	}
	return principal
}

// Record keeps one turn. Text and reply are redacted and cut to MaxText
// before anything is stored.
func (k *Keeper) Record(ctx context.Context, principal, chat string, group bool, text, reply string) error {
	text, reply = cut(Redact(text)), cut(Redact(reply))
	if text == "" && reply == "" {
		return nil
	}
	_, maxTurns := k.bounds()
	t := store.Turn{
		Log: LogOf(principal, chat, group), Principal: principal, Chat: chat,
		Text: text, Reply: reply, At: k.now(), Terms: Terms(text + "\n" + reply),
	}
	if _, err := k.st.Append(ctx, t, maxTurns, k.since()); err != nil {
		return fmt.Errorf("memory: record: %w", err)
	}
	return nil
}

func cut(s string) string {
	if utf8.RuneCountInString(s) <= MaxText {
		return s
	}
	return string([]rune(s)[:MaxText]) + "…"
}

// Page is one page of search hits, newest first.
type Page struct {
	Turns []store.Turn
	Page  int  // 1-based
	More  bool // a next page exists
}

// Search finds the turns of log that hold every part of query, newest
// first, PageSize a page (page 1 is the newest).
func (k *Keeper) Search(ctx context.Context, log, query string, page int) (Page, error) {
	q := ParseQuery(query)
	if q.Empty() {
		return Page{}, ErrEmptyQuery
	}
	page = min(max(page, 1), MaxPage)
	out := Page{Page: page}
	skip := (page - 1) * PageSize
	hq := store.HistoryQuery{Since: k.since(), Limit: batch}
	for {
		cands, err := k.st.Search(ctx, log, q.Terms, hq)
		if err != nil {
			return Page{}, fmt.Errorf("memory: search: %w", err)
		}
		for _, t := range cands {
			if !q.Match(t.Text + "\n" + t.Reply) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if len(out.Turns) == PageSize {
				out.More = true
				return out, nil
			}
			out.Turns = append(out.Turns, t)
		}
		if len(cands) < batch {
			return out, nil
		}
		hq.Before = cands[len(cands)-1].ID
	}
}

// List returns the newest turns of log, at most limit (0: PageSize),
// older than before ("" from the newest).
func (k *Keeper) List(ctx context.Context, log, before string, limit int) ([]store.Turn, error) {
	if limit <= 0 {
		limit = PageSize
	}
	ts, err := k.st.List(ctx, log, store.HistoryQuery{Before: before, Since: k.since(), Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	return ts, nil
}

// Forget deletes a log's turns and their index entries: every turn when
// principal is "", else that principal's.
func (k *Keeper) Forget(ctx context.Context, log, principal string) (int, error) {
	n, err := k.st.Forget(ctx, log, principal)
	if err != nil {
		return n, fmt.Errorf("memory: forget: %w", err)
	}
	return n, nil
}

// Run prunes turns past retention until ctx ends. It sleeps until the
// oldest turn left expires (at most one retention period when there is
// none, as no turn written later can expire sooner): no polling tick.
func (k *Keeper) Run(ctx context.Context) error {
	for {
		wait := k.pruneOnce(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-k.changed:
			t.Stop()
		case <-t.C:
		}
	}
}

// pruneOnce prunes and returns how long to sleep.
func (k *Keeper) pruneOnce(ctx context.Context) time.Duration {
	retention, _ := k.bounds()
	now := k.now()
	oldest, err := k.st.Prune(ctx, now.Add(-retention))
	if err != nil {
		if ctx.Err() == nil {
			k.log.Warn().Err(err).Msg("history prune failed; trying again later")
		}
		return minPruneWait
	}
	wait := retention
	if !oldest.IsZero() {
		wait = oldest.Add(retention).Sub(now)
	}
	return min(max(wait, minPruneWait), retention)
}
