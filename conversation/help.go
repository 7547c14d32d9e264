package conversation

import ()

func (t *turn) help() []Reply {
	if t.zh() {
		return []Reply{{Text: `我可以帮你关注网页、订阅源和日历，有变化时通知你。
/watch <网址> [every 30m | daily 08:00] [as ` + kindChoice + `] [name 名称] — 申请关注，例如 /watch https://news.example.edu/feed.xml every 1h
/remind <日历网址> [before 72h,24h,2h] — 截止提醒
/tasks — 我的任务（管理员：全部）
/task <编号> — 详情、范围、最近运行
/pause /resume /delete /run <编号> — 管理任务
/approve /reject <申请编号> — 管理员审批
/inbox — 未读消息；/inbox token — 获取收件箱 API 令牌；/read <编号|all>
/mute <任务编号> <时长|off> — 静音；/quiet <22:00-07:00|off> — 免打扰
/history <关键词> [page 2] — 搜索我们的对话（群里：本群的）；/forget — 删除你的对话历史
/cancel — 取消当前对话`}}
	}
	return []Reply{{Text: `I watch web pages, feeds and calendars and tell you what changed.
/watch <url> [every 30m | daily 08:00] [as ` + kindChoice + `] [name text] — request a watch, e.g. /watch https://news.example.edu/feed.xml every 1h
/remind <calendar url> [before 72h,24h,2h] — deadline reminders
/tasks — my tasks (admins: all)
/task <id> — details, scope, last runs
/pause /resume /delete /run <id> — manage a task
/approve /reject <request-id> — admins decide requests
/inbox — unread items; /inbox token — an inbox API token; /read <id|all>
/mute <task-id> <duration|off> — mute a task here; /quiet <22:00-07:00|off> — quiet hours
/history <words> [page 2] — search our conversation (in a group: the group's); /forget — delete your history
/cancel — cancel the question in progress`}}
}
