package delivery

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

// Prefs are one chat's delivery preferences, set with /quiet and /mute.
type Prefs struct {
	Quiet string               `json:"quiet,omitempty"` // "22:00-07:00" in Zone
	Zone  string               `json:"zone,omitempty"`
	Mutes map[string]time.Time `json:"mutes,omitempty"` // task id → until
	Lang  string               `json:"lang,omitempty"`
}

// UrgentWindow: a deadline reminder due within this bypasses quiet hours.
const UrgentWindow = 2 * time.Hour

// PrefStore keeps Prefs in the channel-state storage object.
type PrefStore struct {
	KV   store.KV
	Zone *time.Location // default zone for quiet hours
	// Changed, when set, is told of the address whose quiet hours or
	// mutes an Update changed (Dispatcher.Release lets out what they no
	// longer hold).
	Changed func(ctx context.Context, address string)
}

func prefsKey(address string) string { return "prefs/" + address }

// Get returns a chat's prefs (zero value when none).
func (s *PrefStore) Get(ctx context.Context, address string) (Prefs, error) {
	var p Prefs
	b, err := s.KV.Get(ctx, prefsKey(address))
	if errors.Is(err, store.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(b, &p)
}

// Update changes a chat's prefs.
func (s *PrefStore) Update(ctx context.Context, address string, fn func(*Prefs)) error {
	p, err := s.Get(ctx, address)
	if err != nil {
		return err
	}
	before := p.Quiet + "|" + fmt.Sprint(p.Mutes)
	fn(&p)
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := s.KV.Put(ctx, prefsKey(address), b, 0); err != nil {
		return err
	}
	if s.Changed != nil && p.Quiet+"|"+fmt.Sprint(p.Mutes) != before {
		s.Changed(ctx, address)
	}
	return nil
}

// Lang returns the language remembered for a chat. An inbox has no
// language of its own: its owner's is the one remembered where they talk
// to herald, their private chat (a console user's console, too).
func (s *PrefStore) Lang(to string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, _ := s.Get(ctx, to)
	if a, err := ParseAddress(to); p.Lang == "" && err == nil && a.Kind == InboxAddr {
		if chat := address.ChatOf(a.ID); chat != "" {
			p, _ = s.Get(ctx, chat)
		}
	}
	return p.Lang
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

// Hold implements HoldPolicy: a muted task is held until the mute ends; quiet
// hours hold everything except deadline reminders due within UrgentWindow,
// and hold a later reminder only until it comes within that window.
func (s *PrefStore) Hold(ctx context.Context, recipient, taskID string, urgentDue, now time.Time) (time.Time, bool) {
	if !hasPrefs(recipient) {
		return time.Time{}, false
	}
	p, err := s.Get(ctx, recipient)
	if err != nil {
		return time.Time{}, false
	}
	if until, ok := p.Mutes[taskID]; ok && now.Before(until) {
		return until, true
	}
	if p.Quiet == "" {
		return time.Time{}, false
	}
	if !urgentDue.IsZero() && urgentDue.Sub(now) <= UrgentWindow {
		return time.Time{}, false
	}
	from, to, err := ParseQuiet(p.Quiet)
	if err != nil {
		return time.Time{}, false
	}
	zone := s.Zone
	if p.Zone != "" {
		if z, err := time.LoadLocation(p.Zone); err == nil {
			zone = z
		}
	}
	if zone == nil {
		zone = time.UTC
	}
	until, held := quietUntil(now.In(zone), from, to)
	if held && !urgentDue.IsZero() {
		// A reminder is held only until it becomes urgent, so quiet hours
		// never make it miss its deadline.
		until = notAfter(until, urgentDue.Add(-UrgentWindow))
	}
	return until, held
}

// hasPrefs reports whether address can have Prefs: only chats set them
// (/quiet, /mute; the console too), so other addresses skip the store read.
func hasPrefs(address string) bool {
	kind, _, _ := strings.Cut(address, ":")
	return AddressKind(kind).Chat() || kind == "console"
}

// quietUntil reports whether local time now lies in [from, to) (which may
// wrap midnight) and when the window ends.
func quietUntil(now time.Time, from, to time.Duration) (time.Time, bool) {
	y, m, d := now.Date()
	midnight := time.Date(y, m, d, 0, 0, 0, 0, now.Location())
	tod := now.Sub(midnight)
	at := func(day int, off time.Duration) time.Time {
		base := time.Date(y, m, d+day, 0, 0, 0, 0, now.Location())
		return base.Add(off)
	}
	if from < to {
		if tod >= from && tod < to {
			return at(0, to), true
		}
		return time.Time{}, false
	}
	switch { // wraps midnight, e.g. 22:00-07:00
	case tod >= from:
		return at(1, to), true
	case tod < to:
		return at(0, to), true
	}
	return time.Time{}, false
}

var _ HoldPolicy = (*PrefStore)(nil)
