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
	err := t.c.o.Prefs.Update(t.ctx, t.m.Chat, func(p *chatprefs.Prefs) {
		if q == "off" {
			p.Quiet = ""
			return
		}
		p.Quiet = q
		if p.Zone == "" {
			p.Zone = t.c.zone().String()
		}
	})
	if err != nil {
		return t.failed(err)
	}
	if q == "off" {
		return t.reply("prefs.quiet_hours_are_off")
	}
	return t.reply("prefs.quiet_hours_set_for", q, t.c.zone())
}

// digest sets or lifts the chat's digest (SPEC §20): its change notices
// wait and go out together at each fire of s, or one by one again.
func (t *turn) digest(s string) []Reply {
	err := t.c.o.Prefs.Update(t.ctx, t.m.Chat, func(p *chatprefs.Prefs) {
		if s == "off" {
			p.Digest = ""
			return
		}
		p.Digest = s
		if p.Zone == "" {
			p.Zone = t.c.zone().String()
		}
	})
	if err != nil {
		return t.failed(err)
	}
	if s == "off" {
		return t.reply("prefs.digest_is_off")
	}
	return t.reply("prefs.digest_set_for", s, t.c.zone())
}
