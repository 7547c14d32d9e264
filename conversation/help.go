package conversation

import "strings"

// helpLine is one form of a command, with one example, in both languages.
type helpLine struct {
	en, zh     string // the form and what it does
	exEn, exZh string // an example; "" when the form is its own example
}

// helpLines lists every form a person can type (README, Chat commands).
var helpLines = []helpLine{
	{"/watch <url> every 30m — check every 30 minutes", "/watch <网址> 每 30 分钟 — 每 30 分钟检查一次",
		"/watch https://news.example.edu/feed.xml every 30m", "/watch https://news.example.edu/feed.xml 每 30 分钟"},
	{"/watch <url> daily 08:00 [Area/City] — once a day", "/watch <网址> 每天 08:00 [时区] — 每天一次",
		"/watch https://news.example.edu/feed.xml daily 08:00 Asia/Shanghai", "/watch https://news.example.edu/feed.xml 每天 08:00"},
	{"/watch <url> weekly mon 08:00 — once a week (mon,thu for several days)", "/watch <网址> 每周一 08:00 — 每周一次（多天写 每周一、四）",
		"/watch https://news.example.edu/feed.xml weekly mon 08:00", "/watch https://news.example.edu/feed.xml 每周一 08:00"},
	{"/watch <url> at <date time> — once, at that time", "/watch <网址> at <日期 时间> — 在该时间检查一次",
		"/watch https://news.example.edu/feed.xml at 2026-12-24 09:00", "/watch https://news.example.edu/feed.xml at 2026-12-24 09:00"},
	{"/watch <url> cron <5 fields> [Area/City] — a cron schedule", "/watch <网址> cron <5 个字段> [时区] — cron 表达式",
		"/watch https://news.example.edu/feed.xml cron 0 9 * * 1-5", "/watch https://news.example.edu/feed.xml cron 0 9 * * 1-5"},
	{"/watch <url> as " + kindChoice + " — say the kind (else detected)", "/watch <网址> as " + kindChoice + " — 指定类型（默认自动识别）",
		"/watch https://lms.example.edu/calendar.ics as ical", "/watch https://lms.example.edu/calendar.ics as ical"},
	{`/watch <url> as html selector "<css>" — watch part of a page`, `/watch <网址> as html selector "<css>" — 只关注网页的一部分`,
		`/watch https://dept.example.edu/notices as html selector "ul.notices > li"`, `/watch https://dept.example.edu/notices as html selector "ul.notices > li"`},
	{`/watch <url> name "<text>" — give it a name`, `/watch <网址> name 「名称」 — 起个名字`,
		`/watch https://news.example.edu/feed.xml name "Campus news"`, `/watch https://news.example.edu/feed.xml name 「校园新闻」`},
	{"/watch canvas|moodle <site> [courses 12345,678] — your course site; I ask for your access token in a private chat",
		"/watch canvas|moodle <网站> [courses 12345,678] — 你的课程网站；我会在私聊中向你要访问令牌",
		"/watch canvas https://school.instructure.com courses 12345,678 every 1h", "/watch canvas https://school.instructure.com courses 12345,678 每 1 小时"},
	{"/token <site> — give a course site a new access token (private chat)", "/token <网站> — 为课程网站换一个新的访问令牌（私聊）",
		"/token https://school.instructure.com", "/token https://school.instructure.com"},
	{"/token <site> off — forget your stored token for a course site", "/token <网站> off — 删除为课程网站保存的令牌",
		"/token https://school.instructure.com off", "/token https://school.instructure.com off"},
	{"/remind <calendar url> [before 72h,24h,2h] — deadline reminders", "/remind <日历网址> [before 72h,24h,2h] — 截止提醒",
		"/remind https://lms.example.edu/calendar.ics before 24h,2h", "/remind https://lms.example.edu/calendar.ics before 24h,2h"},
	{"/tasks — my tasks (admins: all)", "/tasks — 我的任务（管理员：全部）", "", ""},
	{"/task <id> — details, scope, last runs", "/task <编号> — 详情、范围、最近运行", "/task t-7f3a2c", "/task t-7f3a2c"},
	{"/pause, /resume, /delete, /run <id> — manage a task", "/pause、/resume、/delete、/run <编号> — 管理任务", "/pause t-7f3a2c", "/pause t-7f3a2c"},
	{"/approve <request-id> — admins approve a request", "/approve <申请编号> — 管理员批准申请", "/approve r-7f3a2c", "/approve r-7f3a2c"},
	{"/reject <request-id> [reason] — admins reject it", "/reject <申请编号> [原因] — 管理员拒绝申请", "/reject r-7f3a2c not a course site", "/reject r-7f3a2c 不是课程网站"},
	{"/inbox — unread notices", "/inbox — 未读通知", "", ""},
	{"/inbox <id> or /read <id> — read one notice in full, with its links", "/inbox <编号> 或 /read <编号> — 阅读一条通知的全文和链接", "/read 7", "/read 7"},
	{"/read all — mark everything read", "/read all — 全部标记为已读", "", ""},
	{"/inbox token — a token for the inbox API", "/inbox token — 获取收件箱 API 令牌", "", ""},
	{"/mute <task-id> <duration|off> — hold a task's pushes here", "/mute <任务编号> <时长|off> — 在此暂存某任务的推送", "/mute t-7f3a2c 2h", "/mute t-7f3a2c 2h"},
	{"/quiet <HH:MM-HH:MM|off> — quiet hours for this chat", "/quiet <HH:MM-HH:MM|off> — 本聊天的免打扰时段", "/quiet 22:00-07:00", "/quiet 22:00-07:00"},
	{"/lang en|zh|auto — pin my language here, or follow each message", "/lang en|zh|auto — 固定回复语言，或按每条消息的语言", "/lang zh", "/lang en"},
	{"/history <words> [page 2] — search our conversation (in a group: the group's)", "/history <关键词> [page 2] — 搜索我们的对话（群里：本群的）",
		"/history exam notice", "/history 考试"},
	{"/forget — delete your conversation history", "/forget — 删除你的对话历史", "", ""},
	{"/downloads <id> — the course files a task keeps", "/downloads <编号> — 任务保存的课程文件", "", ""},
	{"/cancel — cancel the question in progress", "/cancel — 取消当前对话", "", ""},
}

// help lists every form, one example each, in the turn's language.
func (t *turn) help() []Reply {
	var b strings.Builder
	b.WriteString(t.tr("I watch web pages, feeds and calendars and tell you what changed. Every form, with an example:\n",
		"我可以帮你关注网页、订阅源和日历，有变化时通知你。全部用法及示例：\n"))
	for _, l := range helpLines {
		b.WriteString(t.tr(l.en, l.zh))
		if ex := t.tr(l.exEn, l.exZh); ex != "" {
			b.WriteString(t.tr("\n    e.g. ", "\n    例如 ") + ex)
		}
		b.WriteString("\n")
	}
	b.WriteString(t.tr("Schedules may be typed in Chinese too; /lang zh answers in Chinese.",
		"时间安排也可以用英文（daily 08:00）；发送 /lang en 改用英文回复。"))
	return []Reply{{Text: b.String()}}
}
