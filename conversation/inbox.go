package conversation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/herald-bridge/herald/store"
)

func (t *turn) inbox() []Reply {
	inbox := t.c.o.Store.Inbox()
	items, err := inbox.List(t.ctx, t.m.Principal, store.InboxQuery{Limit: 10, UnreadOnly: true})
	if err != nil {
		return t.failed(err)
	}
	if len(items) == 0 {
		return t.reply("Your inbox has nothing unread.", "收件箱里没有未读消息。")
	}
	n, _ := inbox.Unread(t.ctx, t.m.Principal)
	var b strings.Builder
	fmt.Fprintf(&b, t.tr("Unread (%d), newest first:\n", "未读（%d 条），最新在前：\n"), n)
	for _, it := range items {
		title := it.Title
		if len([]rune(title)) > 80 {
			title = string([]rune(title)[:80]) + "…"
		}
		fmt.Fprintf(&b, "%s  %s  %s\n", it.ID, t.when(it.CreatedAt), title)
	}
	b.WriteString(t.tr("/read <id> or /read all marks them read.", "发送 /read <编号> 或 /read all 标记为已读。"))
	return []Reply{{Text: b.String()}}
}

func (t *turn) read(id string) []Reply {
	target := id
	if id == "all" {
		target = ""
	}
	n, err := t.c.o.Store.Inbox().MarkRead(t.ctx, t.m.Principal, target)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return t.failed(err)
	}
	if n == 0 {
		if id == "all" {
			return t.reply("Nothing was unread.", "没有未读消息。")
		}
		return t.reply(fmt.Sprintf("There is no unread item %s in your inbox; see /inbox.", id),
			fmt.Sprintf("收件箱里没有未读的 %s；发送 /inbox 查看。", id))
	}
	return t.reply(fmt.Sprintf("Marked %d read.", n), fmt.Sprintf("已将 %d 条标记为已读。", n))
}

// inboxToken issues an inbox API token, in private only.
func (t *turn) inboxToken() []Reply {
	if t.c.o.Tokens == nil {
		return t.reply("Inbox tokens are not available here.", "此处不提供收件箱令牌。")
	}
	private := ChatOf(t.m.Principal)
	if t.m.Group && (private == "" || t.c.sender(private) == nil) {
		return t.reply("Ask me for an inbox token in a private chat.", "请在私聊中向我申请收件箱令牌。")
	}
	tok, err := t.c.o.Tokens.Issue(t.ctx, t.m.Principal)
	if err != nil {
		return t.failed(err)
	}
	text := t.tr("Your inbox API token (keep it secret; it reads your inbox):\n"+tok+"\nUse it as: Authorization: Bearer <token> on GET /api/v1/inbox",
		"你的收件箱 API 令牌（请保密，它可以读取你的收件箱）：\n"+tok+"\n用法：GET /api/v1/inbox，请求头 Authorization: Bearer <令牌>")
	if !t.m.Group {
		return []Reply{{Text: text}}
	}
	if err := t.c.say(t.ctx, private, Reply{Text: text}); err != nil {
		return t.reply("I could not reach you in private; start a private chat with me and ask again.", "无法私聊你；请先和我私聊再申请。")
	}
	return t.reply("I sent you an inbox token in a private chat.", "已通过私聊发送收件箱令牌。")
}
