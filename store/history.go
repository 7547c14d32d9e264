package store

import (
	"context"
	"time"
)

// ---------------------------------------------------------------- history

// Turn is one conversation turn kept in a history log: what someone wrote
// and what herald answered. A log belongs to one principal (their private
// chats) or to one group chat; logs never share turns.
type Turn struct {
	ID        string    `json:"id"`        // assigned by the store; sorts by append order within the log
	Log       string    `json:"log"`       // the log: a principal, or a group chat's address
	Principal string    `json:"principal"` // who wrote
	Chat      string    `json:"chat"`      // where
	Text      string    `json:"text"`      // what they wrote (the caller has redacted secrets)
	Reply     string    `json:"reply"`     // what herald answered
	At        time.Time `json:"at"`
	// Terms are the index terms of the turn (the caller tokenises); the
	// store indexes them and keeps them to remove the index entries again.
	Terms []string `json:"terms,omitempty"`
}

// HistoryQuery pages a log newest first.
type HistoryQuery struct {
	Before string    // turn id: only older turns ("" = from the newest)
	Since  time.Time // only turns at or after it (the retention cut-off)
	Limit  int       // 0: DefaultHistoryPage
}

// DefaultHistoryPage is the page size of a HistoryQuery without a Limit.
const DefaultHistoryPage = 50

// PageSize is the most turns one page of q holds.
func (q HistoryQuery) PageSize() int {
	if q.Limit <= 0 {
		return DefaultHistoryPage
	}
	return q.Limit
}

// History is the per-log conversation history with its search index: an
// inverted index from term to turn, in the same store, so that every
// replica sharing the store sees the same history.
type History interface {
	// Append stores t at the end of its log and indexes t.Terms. In the
	// same step it drops the log's turns older than since and all but the
	// newest keep (keep <= 0: DefaultHistoryTurns), with their index entries.
	Append(ctx context.Context, t Turn, keep int, since time.Time) (Turn, error)
	// List returns a log's turns newest first.
	List(ctx context.Context, log string, q HistoryQuery) ([]Turn, error)
	// Search returns the log's turns indexed under every one of terms,
	// newest first; an empty terms matches nothing. The caller checks
	// the stored text for the exact phrase.
	Search(ctx context.Context, log string, terms []string, q HistoryQuery) ([]Turn, error)
	// Forget deletes a log's turns and their index entries: all of them
	// when principal is "", else only those principal wrote. It returns
	// how many it deleted.
	Forget(ctx context.Context, log, principal string) (int, error)
	// Prune drops every log's turns older than cutoff and reports the
	// time of the oldest turn left in any log (zero when none), so the
	// caller can sleep until it expires instead of polling.
	Prune(ctx context.Context, cutoff time.Time) (oldest time.Time, err error)
}

// DefaultHistoryTurns is the most turns a log keeps when Append is given
// no bound (docs/chat.md, Memory).
const DefaultHistoryTurns = 10000
