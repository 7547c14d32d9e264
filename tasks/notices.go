package tasks

import (
	"context"
	"fmt"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store"
)

// Notices herald sends task owners, in English and Chinese. They
// follow the owner's language where the owner talks to herald: the chat's
// pinned (/lang en|zh) or last-used language, kept in that chat's prefs;
// the task's Lang (the language it was requested in) only when the owner
// has not talked there since.
type Notice int

const (
	NoticeBaseline Notice = iota
	NoticeSuspect
	NoticeFailing
	NoticeRecovered
	NoticeUnreachable
	NoticeWatchingMany
)

var noticeText = map[Notice][2][2]string{ // [en|zh][title|format]
	NoticeBaseline: {
		{"Watching", "Now watching %[1]s: %[2]d items. You will hear about changes only."},
		{"开始关注", "已开始关注 %[1]s：当前 %[2]d 项。之后只在有变化时通知你。"},
	},
	NoticeWatchingMany: {
		{"Watching", "Now watching %[1]s sources (%[2]s items in all). You will hear about changes only."},
		{"开始关注", "已开始关注 %[1]s 个来源（共 %[2]s 项）。之后只在有变化时通知你。"},
	},
	NoticeSuspect: {
		{"Many items changed at once", "Most items of %[1]s changed in one check, which usually means the site was redesigned or its ids were regenerated. Nothing was pushed. To accept the new state as the baseline, run: herald tasks rebaseline %[2]s"},
		{"大量条目同时变化", "%[1]s 的大部分条目在一次检查中同时变化，通常是网站改版或条目编号重新生成。本次没有推送。若确认以新状态为基准，请运行：herald tasks rebaseline %[2]s"},
	},
	NoticeFailing: {
		{"Watch failing", "%[1]s failed %[2]d checks in a row (%[3]s). herald keeps trying."},
		{"关注任务连续失败", "%[1]s 已连续 %[2]d 次检查失败（%[3]s）。herald 会继续重试。"},
	},
	NoticeRecovered: {
		{"Watch recovered", "%[1]s works again."},
		{"关注任务已恢复", "%[1]s 已恢复正常。"},
	},
	NoticeUnreachable: {
		{"A recipient is unreachable", "Pushes for %[1]s cannot reach one of its recipients (%[2]s). Check that the bot is still in that chat."},
		{"有接收方无法送达", "%[1]s 的推送无法送达其中一个接收方（%[2]s）。请确认机器人仍在该会话中。"},
	},
}

// Say returns a notice's title and text in the owner's language.
func Say(ctx context.Context, st store.Store, t *Task, n Notice, args ...any) (title, text string) {
	title, format := NoticeText(n, OwnerLang(ctx, st, t))
	return title, fmt.Sprintf(format, args...)
}

// NoticeText is a notice's title and format in lang ("zh", else English).
func NoticeText(n Notice, lang string) (title, format string) {
	i := 0
	if lang == "zh" {
		i = 1
	}
	s := noticeText[n][i]
	return s[0], s[1]
}

// OwnerLang is the language the owner last used (or pinned) where the
// notice goes, else in the chat the request came from, else in the
// owner's private chat; else the task's own language.
func OwnerLang(ctx context.Context, st store.Store, t *Task) string {
	prefs := chatprefs.Store{KV: st.Channels()}
	for _, chat := range []string{t.OwnerAddress(), t.ReplyTo, address.ChatOf(t.Owner)} {
		if chat == "" {
			continue
		}
		if p, err := prefs.Get(ctx, chat); err == nil && (p.Lang == "en" || p.Lang == "zh") {
			return p.Lang
		}
	}
	return t.Lang
}
