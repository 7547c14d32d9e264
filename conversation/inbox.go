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
		return t.reply("inbox.your_inbox_has_nothing")
	}
	n, _ := inbox.Unread(t.ctx, t.m.Principal)
	var b strings.Builder
	fmt.Fprintf(&b, t.tr("inbox.unread_newest_first"), n)
	for _, it := range items {
		title := it.Title
		if len([]rune(title)) > 80 {
			title = string([]rune(title)[:80]) + "…"
		}
		fmt.Fprintf(&b, "%s  %s  %s\n", it.ID, t.when(it.CreatedAt), title)
	}
	b.WriteString(t.tr("inbox.read_id_or_read"))
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
			return t.reply("inbox.nothing_was_unread")
		}
		return t.reply("inbox.there_is_no_unread", id)
	}
	return t.reply("inbox.marked_read", n)
}

// inboxToken issues an inbox API token, in private only.
func (t *turn) inboxToken() []Reply {
	if t.c.o.Tokens == nil {
		return t.reply("inbox.inbox_tokens_are_not")
	}
	private := ChatOf(t.m.Principal)
	if t.m.Group && (private == "" || t.c.sender(private) == nil) {
		return t.reply("inbox.ask_me_for_inbox")
	}
	tok, err := t.c.o.Tokens.Issue(t.ctx, t.m.Principal)
	if err != nil {
		return t.failed(err)
	}
	text := t.tr("inbox.your_inbox_api_token", tok)
	if !t.m.Group {
		return []Reply{{Text: text}}
	}
	if err := t.c.say(t.ctx, private, Reply{Text: text}); err != nil {
		return t.reply("inbox.i_could_not_reach")
	}
	return t.reply("inbox.i_sent_you_inbox")
}
