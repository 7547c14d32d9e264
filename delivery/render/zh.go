package render

import (
	"fmt"

	"github.com/herald-bridge/herald/delivery"
)

// zh is the Chinese phrasebook.
var zh = words{
	changes:        func(n int, task string) string { return fmt.Sprintf("%s 有 %d 项更新", task, n) },
	dueIn:          func(left, title string) string { return left + "后截止：" + title },
	overdue:        func(title string) string { return "已逾期：" + title },
	more:           func(n int) string { return fmt.Sprintf("还有 %d 项", n) },
	due:            "截止",
	left:           func(left string) string { return "还剩 " + left },
	ago:            func(ago string) string { return "已过 " + ago },
	open:           "打开",
	change:         map[string]string{delivery.ChangeNew: "新", delivery.ChangeChanged: "更新", delivery.ChangeRemoved: "移除", delivery.ChangeDeadline: "截止"},
	fallback:       "通知",
	dateFmt:        "2006年1月2日 15:04 MST",
	minute:         func(n int) string { return fmt.Sprintf("%d 分钟", n) },
	hour:           func(n int) string { return fmt.Sprintf("%d 小时", n) },
	day:            func(n int) string { return fmt.Sprintf("%d 天", n) },
	separator:      " — ",
	was:            func(title string) string { return "（原为：" + title + "）" },
	dueMoved:       func(from, to string) string { return "截止时间由 " + from + " 改为 " + to },
	wasDue:         func(from string) string { return "原截止时间 " + from },
	inboxFullTitle: "收件箱已满",
	inboxFull: func(limit int) string {
		return fmt.Sprintf("收件箱最多保存 %d 条消息，现在已被未读消息占满，最早的未读消息正在被删除，"+
			"以便存放新消息。标为已读（/read all）即可保留最新的消息。", limit)
	},
	notices: map[string]notice{
		NoticeBaseline:     {"开始关注", "已开始关注 %[1]s：当前 %[2]d 项。之后只在有变化时通知你。"},
		NoticeWatchingMany: {"开始关注", "已开始关注 %[1]s 个来源（共 %[2]s 项）。之后只在有变化时通知你。"},
		NoticeSuspect: {"大量条目同时变化", "%[1]s 的大部分条目在一次检查中同时变化，通常是网站改版或条目编号重新生成。本次没有推送。" +
			"若确认以新状态为基准，请运行：herald tasks rebaseline %[2]s"},
		NoticeFailing:     {"关注任务连续失败", "%[1]s 已连续 %[2]d 次检查失败（%[3]s）。herald 会继续重试。"},
		NoticeRecovered:   {"关注任务已恢复", "%[1]s 已恢复正常。"},
		NoticeUnreachable: {"有接收方无法送达", "%[1]s 的推送无法送达其中一个接收方（%[2]s）。请确认机器人仍在该会话中。"},
		NoticeDisabled: {"接收方已停用", "herald 已停止向 %[1]s 发送（%[2]s）：发往它的推送现在不发送，直接记为失败。" +
			"修好接收端后，运行 herald recipients enable %[1]s（或在控制台点“启用”）重新启用。" +
			"补发错过的推送：herald ledger redeliver --recipient %[1]s"},
	},
	noticeOne:          map[string]string{}, // no plural: one reads as many
	digest:             func(n int) string { return fmt.Sprintf("汇总：%d 项更新", n) },
	inTask:             func(task, title string) string { return task + "：" + title },
	machineSummary:     func(text string) string { return "摘要（机器生成）：" + text },
	machineTranslation: func(text string) string { return "译文（机器生成）：\n" + text },
	moreInInbox:        func(n int) string { return fmt.Sprintf("另有 %d 项在收件箱中（/inbox）", n) },
}
