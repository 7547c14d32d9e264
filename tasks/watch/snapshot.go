package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SnapshotVersion is the schema version Encode writes. DecodeSnapshot
// refuses snapshots written by a newer binary.
const SnapshotVersion = 1

// MaxTombstones bounds Snapshot.Tombstones: only the newest removals are
// kept, which is enough to recognise an item a source briefly dropped.
const MaxTombstones = 1000

var (
	// ErrSnapshotCorrupt reports a stored snapshot that cannot be decoded.
	ErrSnapshotCorrupt = errors.New("snapshot corrupt")
	// ErrSnapshotVersion reports a snapshot written by a newer schema.
	ErrSnapshotVersion = errors.New("snapshot version is newer than this binary")
)

// Entry is what a snapshot remembers about one item.
type Entry struct {
	Digest string    `json:"digest"`
	Title  string    `json:"title,omitempty"`
	URL    string    `json:"url,omitempty"`
	Due    time.Time `json:"due,omitzero"`
	Done   bool      `json:"done,omitempty"`
	Alt    []string  `json:"alt,omitempty"`
	Series string    `json:"series,omitempty"`
	// Summary and Lines are the item's as last recorded: a notice of its
	// removal shows the summary, and a change is told against the lines.
	Summary string   `json:"summary,omitempty"`
	Lines   []string `json:"lines,omitempty"`
	// Reminded lists the remind-before offsets already emitted (or passed
	// over in favour of a nearer one) for this Due, ascending. It is reset
	// when Due changes.
	Reminded []time.Duration `json:"reminded,omitempty"`
	// Removed is when the item was removed; set on tombstones only and
	// used to keep the newest MaxTombstones.
	Removed time.Time `json:"removed,omitzero"`
}

// Snapshot is the state of one task's source as of its last committed run.
// Entries' slices are never modified in place, so snapshots may share them.
type Snapshot struct {
	Version    int              `json:"version"`
	Items      map[string]Entry `json:"items"`      // identity → entry (current items)
	Tombstones map[string]Entry `json:"tombstones"` // removed items, newest MaxTombstones
	Validators Conditional      `json:"validators"`
	Baselined  bool             `json:"baselined"`
}

// DecodeSnapshot decodes a stored snapshot. Nil or empty input means no
// snapshot yet and yields (nil, nil).
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w: %w", ErrSnapshotCorrupt, err)
	}
	switch {
	case s.Version > SnapshotVersion:
		return nil, fmt.Errorf("decode snapshot: version %d, want at most %d: %w", s.Version, SnapshotVersion, ErrSnapshotVersion)
	case s.Version < 1:
		return nil, fmt.Errorf("decode snapshot: version %d: %w", s.Version, ErrSnapshotCorrupt)
	}
	if s.Items == nil {
		s.Items = map[string]Entry{}
	}
	if s.Tombstones == nil {
		s.Tombstones = map[string]Entry{}
	}
	return &s, nil
}

// Encode serialises the snapshot for storage. The output is deterministic:
// equal snapshots encode to equal bytes.
func (s *Snapshot) Encode() ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("encode snapshot: %w: nil snapshot", ErrSnapshotCorrupt)
	}
	c := *s
	if c.Version == 0 {
		c.Version = SnapshotVersion
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return b, nil
}

// newSnapshot returns an empty, baselined snapshot carrying prev's
// validators and tombstones.
func newSnapshot(prev *Snapshot, items int) *Snapshot {
	s := &Snapshot{
		Version:    SnapshotVersion,
		Items:      make(map[string]Entry, items),
		Tombstones: map[string]Entry{},
		Baselined:  true,
	}
	if prev != nil {
		s.Validators = prev.Validators
		for k, e := range prev.Tombstones {
			s.Tombstones[k] = e
		}
	}
	return s
}

// clone copies s's maps; entries are values and their slices are shared.
func (s *Snapshot) clone() *Snapshot {
	c := *s
	c.Items = make(map[string]Entry, len(s.Items))
	for k, e := range s.Items {
		c.Items[k] = e
	}
	c.Tombstones = make(map[string]Entry, len(s.Tombstones))
	for k, e := range s.Tombstones {
		c.Tombstones[k] = e
	}
	return &c
}

// settle drops tombstones of keys that are current again and keeps only
// the newest MaxTombstones.
func (s *Snapshot) settle() {
	for k := range s.Items {
		delete(s.Tombstones, k)
	}
	if len(s.Tombstones) <= MaxTombstones {
		return
	}
	keys := make([]string, 0, len(s.Tombstones))
	for k := range s.Tombstones {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := s.Tombstones[b].Removed.Compare(s.Tombstones[a].Removed); c != 0 {
			return c // newest first
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys[MaxTombstones:] {
		delete(s.Tombstones, k)
	}
}

// entryOf records item it.
func entryOf(it Item) Entry {
	return Entry{
		Digest:  it.Digest,
		Title:   it.Title,
		URL:     it.URL,
		Due:     it.Due,
		Done:    it.Done,
		Alt:     slices.Clone(it.Alt),
		Series:  it.Series,
		Summary: it.Summary,
		Lines:   slices.Clone(it.Lines),
	}
}

// mergeEntry records item it in place of p, keeping p's reminder history
// while the due time is unchanged (a changed due time is a new deadline).
// An unchanged item keeps p itself, sharing its slices.
func mergeEntry(p Entry, it Item) Entry {
	if p.Digest == it.Digest && p.Title == it.Title && p.URL == it.URL &&
		p.Due.Equal(it.Due) && p.Done == it.Done && slices.Equal(p.Alt, it.Alt) && p.Series == it.Series &&
		p.Summary == it.Summary && slices.Equal(p.Lines, it.Lines) {
		p.Removed = time.Time{}
		return p
	}
	e := entryOf(it)
	if p.Due.Equal(it.Due) {
		e.Reminded = p.Reminded
	}
	return e
}

// itemOf rebuilds the item an entry recorded under identity id.
func itemOf(id string, e Entry) Item {
	return Item{
		ID:      id,
		Title:   e.Title,
		URL:     e.URL,
		Digest:  e.Digest,
		Due:     e.Due,
		Done:    e.Done,
		Alt:     slices.Clone(e.Alt),
		Series:  e.Series,
		Summary: e.Summary,
	}
}
