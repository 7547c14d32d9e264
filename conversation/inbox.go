package conversation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/herald-bridge/herald/store"
)

// inboxView answers a turn's /inbox and /read and hands out inbox API
// tokens.
type inboxView struct{ t *turn }

func (iv inboxView) inbox() []Reply {
	inbox := iv.t.c.o.Store.Inbox()
	items, err := inbox.List(iv.t.ctx, iv.t.m.Principal, store.InboxQuery{Limit: 10, UnreadOnly: true})
	if err != nil {
		return iv.t.failed(err)
	}
	if len(items) == 0 {
		return iv.t.reply("inbox.your_inbox_has_nothing")
	}
	n, _ := inbox.Unread(iv.t.ctx, iv.t.m.Principal)
	var b strings.Builder
	fmt.Fprintf(&b, iv.t.tr("inbox.unread_newest_first"), n)
	for _, it := range items {
		title := it.Title
		if len([]rune(title)) > 80 {
			title = string([]rune(title)[:80]) + "…"
		}
		fmt.Fprintf(&b, "%s  %s  %s\n", shortID(it.ID), iv.t.when(it.CreatedAt), title)
	}
	b.WriteString(iv.t.tr("inbox.read_id_or_read"))
	return []Reply{{Text: b.String()}}
}

// shortID is how chat shows an inbox item's id: its number within the
// person's inbox ("7" for 0000000000000007), which /read and /inbox take.
func shortID(id string) string {
	if s := strings.TrimLeft(id, "0"); s != "" {
		return s
	}
	return id
}

func (iv inboxView) read(id string) []Reply {
	target := id
	if id == "all" {
		target = ""
	}
	n, err := iv.t.c.o.Store.Inbox().MarkRead(iv.t.ctx, iv.t.m.Principal, target)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return iv.t.failed(err)
	}
	if n == 0 {
		if id == "all" {
			return iv.t.reply("inbox.nothing_was_unread")
		}
		return iv.t.reply("inbox.there_is_no_unread", id)
	}
	return iv.t.reply("inbox.marked_read", n)
}

// inboxToken issues an inbox API token, in private only.
func (iv inboxView) inboxToken() []Reply {
	if iv.t.c.o.Tokens == nil {
		return iv.t.reply("inbox.inbox_tokens_are_not")
	}
	private := ChatOf(iv.t.m.Principal)
	if iv.t.m.Group && (private == "" || iv.t.c.sender(private) == nil) {
		return iv.t.reply("inbox.ask_me_for_inbox")
	}
	tok, err := iv.t.c.o.Tokens.Issue(iv.t.ctx, iv.t.m.Principal)
	if err != nil {
		return iv.t.failed(err)
	}
	text := iv.t.tr("inbox.your_inbox_api_token", tok)
	if !iv.t.m.Group {
		return []Reply{{Text: text}}
	}
	if err := iv.t.c.say(iv.t.ctx, private, Reply{Text: text}); err != nil {
		return iv.t.reply("inbox.i_could_not_reach")
	}
	return iv.t.reply("inbox.i_sent_you_inbox")
}
