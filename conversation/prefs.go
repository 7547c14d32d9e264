package conversation

import (
	"fmt"
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
		return t.reply(fmt.Sprintf("%s is no longer muted here; held pushes arrive now.", id), fmt.Sprintf("已取消 %s 的静音；暂存的推送马上送达。", id))
	}
	return t.reply(fmt.Sprintf("Muted %s here until %s; its pushes wait and arrive after, once.", id, t.when(until)),
		fmt.Sprintf("已在此静音 %s 至 %s；期间的推送会暂存，之后送达一次。", id, t.when(until)))
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
		return t.reply("Quiet hours are off for this chat.", "已关闭本聊天的免打扰时段。")
	}
	return t.reply(fmt.Sprintf("Quiet hours %s (%s) set for this chat; pushes in that time wait and arrive after, once. Deadline reminders due within 2 hours still come.", q, t.c.zone()),
		fmt.Sprintf("已为本聊天设置免打扰 %s（%s）；期间的推送会暂存，之后送达一次。2 小时内截止的提醒仍会送达。", q, t.c.zone()))
}
