package conversation

import (
	"time"

	"github.com/herald-bridge/herald/delivery/chatprefs"
)

func (t *turn) mute(id string, d time.Duration) []Reply {
	if _, err := t.c.o.Tasks.Get(t.ctx, id); err != nil {
		return t.failed(err)
	}
	until := t.c.o.Now().Add(d)
	err := t.c.o.Prefs.Update(t.ctx, t.m.Chat, func(p *chatprefs.Prefs) {
		if d <= 0 {
			delete(p.Mutes, id)
			return
		}
		if p.Mutes == nil {
			p.Mutes = map[string]time.Time{}
		}
		p.Mutes[id] = until
	})
	if err != nil {
		return t.failed(err)
	}
	if d <= 0 {
		return t.reply("prefs.is_no_longer_muted", id)
	}
	return t.reply("prefs.muted_here_until_its", id, t.when(until))
}

func (t *turn) quiet(q string) []Reply {
	return t.setTimed(q, func(p *chatprefs.Prefs) *string { return &p.Quiet }, "prefs.quiet_hours_are_off", "prefs.quiet_hours_set_for", q, t.c.zone())
}

// digest sets or lifts the chat's digest (SPEC §20): its change notices
// wait and go out together at each fire of s, or one by one again.
func (t *turn) digest(s string) []Reply {
	// The schedule names its zone already; it is shown in the person's words.
	return t.setTimed(s, func(p *chatprefs.Prefs) *string { return &p.Digest }, "prefs.digest_is_off", "prefs.digest_set_for", t.schedule(s))
}

// setTimed sets one of the chat's settings read in its zone (quiet hours,
// the digest) to v, or clears it on "off"; a chat without a zone of its
// own takes the conversation's. It answers with offKey, or setKey over
// shown.
func (t *turn) setTimed(v string, field func(*chatprefs.Prefs) *string, offKey, setKey string, shown ...any) []Reply {
	err := t.c.o.Prefs.Update(t.ctx, t.m.Chat, func(p *chatprefs.Prefs) {
		f := field(p)
		if v == "off" {
			*f = ""
			return
		}
		*f = v
		if p.Zone == "" {
			p.Zone = t.c.zone().String()
		}
	})
	if err != nil {
		return t.failed(err)
	}
	if v == "off" {
		return t.reply(offKey)
	}
	return t.reply(setKey, shown...)
}
