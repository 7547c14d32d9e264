// Package chatprefs owns the settings a chat keeps for itself: its
// language, its quiet hours and zone, and the tasks it muted. The
// conversation side writes them (/lang, /quiet, /mute) and reads the
// language it answers in; delivery reads them to hold or word a chat's
// notices. Neither owns them: both read them here.
//
// A chat's settings are one JSON object under "prefs/<address>" in the
// channel-state storage object. A Telegram forum topic has its group's.
package chatprefs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
)

// Prefs are one chat's settings, set with /lang, /quiet, /mute and
// /digest.
type Prefs struct {
	Quiet string               `json:"quiet,omitempty"` // "22:00-07:00" in Zone
	Zone  string               `json:"zone,omitempty"`
	Mutes map[string]time.Time `json:"mutes,omitempty"` // task id → until
	Lang  string               `json:"lang,omitempty"`
	// Digest is the schedule of the chat's digest (/digest), as the
	// schedule grammar writes it; "" when its notices go one by one.
	Digest string `json:"digest,omitempty"`
}

// Store keeps Prefs in the channel-state storage object.
type Store struct {
	KV   store.KV
	Zone *time.Location // the zone of quiet hours for a chat that set none
	// Changed, when set, is told of the address whose quiet hours or
	// mutes an Update changed (delivery lets out what they no longer
	// hold).
	Changed func(ctx context.Context, address string)
}

func key(to string) string { return "prefs/" + address.WholeChat(to) }

// Get returns a chat's prefs (zero value when none).
func (s *Store) Get(ctx context.Context, address string) (Prefs, error) {
	var p Prefs
	b, err := s.KV.Get(ctx, key(address))
	if errors.Is(err, store.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(b, &p)
}

// Update changes a chat's prefs.
func (s *Store) Update(ctx context.Context, address string, fn func(*Prefs)) error {
	p, err := s.Get(ctx, address)
	if err != nil {
		return err
	}
	before := p.holds()
	fn(&p)
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := s.KV.Put(ctx, key(address), b, 0); err != nil {
		return err
	}
	if s.Changed != nil && p.holds() != before {
		s.Changed(ctx, address)
	}
	return nil
}

// holds sums up what in p holds a chat's notices: quiet hours, mutes and
// the digest.
func (p Prefs) holds() string { return p.Quiet + "|" + fmt.Sprint(p.Mutes) + "|" + p.Digest }

// Lang returns the language remembered for a chat. An inbox has no
// language of its own: its owner's is the one remembered where they talk
// to herald, their private chat (a console user's console, too).
func (s *Store) Lang(to string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, _ := s.Get(ctx, to)
	if a, err := address.Parse(to); p.Lang == "" && err == nil && a.Kind == address.Inbox {
		if chat := address.ChatOf(a.ID); chat != "" {
			p, _ = s.Get(ctx, chat)
		}
	}
	return p.Lang
}

// Location is the zone p's quiet hours are read in: the chat's own, else
// the store's default, else UTC.
func (s *Store) Location(p Prefs) *time.Location {
	zone := s.Zone
	if p.Zone != "" {
		if z, err := time.LoadLocation(p.Zone); err == nil {
			zone = z
		}
	}
	if zone == nil {
		zone = time.UTC
	}
	return zone
}

// ParseQuiet checks "HH:MM-HH:MM".
func ParseQuiet(s string) (from, to time.Duration, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return 0, 0, fmt.Errorf("quiet hours look like 22:00-07:00")
	}
	if from, err = clock(a); err != nil {
		return 0, 0, err
	}
	if to, err = clock(b); err != nil {
		return 0, 0, err
	}
	if from == to {
		return 0, 0, fmt.Errorf("quiet hours must not start and end at the same time")
	}
	return from, to, nil
}

func clock(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a time like 07:00", s)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}
