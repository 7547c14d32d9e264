package tasks

import "fmt"

// Notices the manager sends task owners, in English and Chinese. The task's
// Lang (the requester's language) picks one.
type notice int

const (
	noticeBaseline notice = iota
	noticeSuspect
	noticeFailing
	noticeRecovered
	noticeUnreachable
)

var noticeText = map[notice][2][2]string{ // [en|zh][title|format]
	noticeBaseline: {
		{"Watching", "Now watching %[1]s: %[2]d items. You will hear about changes only."},
		{"开始关注", "已开始关注 %[1]s：当前 %[2]d 项。之后只在有变化时通知你。"},
	},
	noticeSuspect: {
		{"Many items changed at once", "Most items of %[1]s changed in one check, which usually means the site was redesigned or its ids were regenerated. Nothing was pushed. To accept the new state as the baseline, run: herald tasks rebaseline %[2]s"},
		{"大量条目同时变化", "%[1]s 的大部分条目在一次检查中同时变化，通常是网站改版或条目编号重新生成。本次没有推送。若确认以新状态为基准，请运行：herald tasks rebaseline %[2]s"},
	},
	noticeFailing: {
		{"Watch failing", "%[1]s failed %[2]d checks in a row (%[3]s). herald keeps trying."},
		{"关注任务连续失败", "%[1]s 已连续 %[2]d 次检查失败（%[3]s）。herald 会继续重试。"},
	},
	noticeRecovered: {
		{"Watch recovered", "%[1]s works again."},
		{"关注任务已恢复", "%[1]s 已恢复正常。"},
	},
	noticeUnreachable: {
		{"A recipient is unreachable", "Pushes for %[1]s cannot reach one of its recipients (%[2]s). Check that the bot is still in that chat."},
		{"有接收方无法送达", "%[1]s 的推送无法送达其中一个接收方（%[2]s）。请确认机器人仍在该会话中。"},
	},
}

// say returns a notice's title and text in t's language.
func (t *Task) say(n notice, args ...any) (title, text string) {
	lang := 0
	if t.Lang == "zh" {
		lang = 1
	}
	s := noticeText[n][lang]
	return s[0], fmt.Sprintf(s[1], args...)
}
