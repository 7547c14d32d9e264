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
}
