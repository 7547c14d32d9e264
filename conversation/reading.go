package conversation

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/store"
)

// showItem answers /inbox <id> and /read <id>: the notice in full — its
// headline, text, items and their links — and marks it read.
func (iv inboxView) showItem(id string) []Reply {
	it, ok, err := iv.findItem(id)
	if err != nil {
		return iv.t.failed(err)
	}
	if !ok {
		return iv.t.reply("reading.there_is_no_item", id)
	}
	body := it.Title
	var msg delivery.Message
	if json.Unmarshal(it.Body, &msg) == nil {
		if msg.Title == "" {
			msg.Title = it.Title // the headline the inbox stored
		}
		body = render.Text(msg, iv.t.lang, iv.t.c.zone(), it.CreatedAt)
	}
	if !it.Read {
		if _, err := iv.t.c.o.Store.Inbox().MarkRead(iv.t.ctx, iv.t.m.Principal, it.ID); err != nil {
			iv.t.c.log.Warn().Err(err).Msg("inbox item not marked read")
		}
	}
	text := fmt.Sprintf("%s  %s\n%s", shortID(it.ID), iv.t.when(it.CreatedAt), strings.TrimRight(body, "\n"))
	return []Reply{{Text: text}}
}

// findItem looks an item up in the person's inbox, newest first. A
// number matches the id it is a short form of ("7" for 0000000000000007).
func (iv inboxView) findItem(id string) (store.InboxItem, bool, error) {
	inbox := iv.t.c.o.Store.Inbox()
	want := strings.TrimLeft(id, "0")
	before := ""
	for range store.InboxCap/50 + 1 {
		items, err := inbox.List(iv.t.ctx, iv.t.m.Principal, store.InboxQuery{Before: before, Limit: 50})
		if err != nil {
			return store.InboxItem{}, false, err
		}
		for _, it := range items {
			if it.ID == id || (want != "" && strings.TrimLeft(it.ID, "0") == want) {
				return it, true, nil
			}
		}
		if len(items) < 50 {
			break
		}
		before = items[len(items)-1].ID
	}
	return store.InboxItem{}, false, nil
}
