package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store/bolt"
)

const (
	oldGroup   = "-4001"    // a basic group
	superGroup = "-1004001" // the supergroup it became
	laterGroup = "-1009999" // a second move, never followed
	oldAddr    = "telegram:chat:" + oldGroup
)

// migrateAnswer is the Bot API's refusal of a send to a group that became
// a supergroup.
func migrateAnswer(to string) (int, string) {
	return http.StatusBadRequest, fmt.Sprintf(`{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":%s}}`, to)
}

// upgraded makes the fake refuse sends to oldGroup as Telegram does once
// it was upgraded to superGroup.
func upgraded(api *fakeAPI) {
	api.on("sendMessage", func(p map[string]string) (int, string) {
		if p["chat_id"] == oldGroup {
			return migrateAnswer(superGroup)
		}
		return 0, ""
	})
}

func oldGroupText(id int64, text string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1764464400,"from":{"id":42,"is_bot":false,"first_name":"Ada","language_code":"en"},"chat":{"id":%s,"type":"group","title":"Team"},"text":%q}}`,
		id, id+1000, oldGroup, text)
}

func TestReplyFollowsGroupMigrationOnceAndRemembersIt(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(t.TempDir(), "migrate.db")
	st, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	upgraded(e.api)
	// A reply long enough for two parts: the refused first part is sent
	// once more to the supergroup, the second goes straight there.
	long := strings.Repeat("a line of the task list\n", 250)
	e.h.reply = func(conversation.Message) []conversation.Reply { return []conversation.Reply{{Text: long}} }
	o := e.options(ModeWebhook)
	o.Store = st
	c := e.channel(t, o)

	// A command in the old group, answered after the upgrade.
	if rec := postHook(t, c.WebhookHandler(), testSecret, oldGroupText(50, "/tasks@herald_bot")); rec.Code != http.StatusOK {
		t.Fatalf("answer %d", rec.Code)
	}
	if n := len(e.api.sentTo(oldGroup)); n != 1 {
		t.Fatalf("%d sends to the old group, want the one refused", n)
	}
	moved := e.api.sentTo(superGroup)
	if len(moved) != 2 {
		t.Fatalf("%d parts reached the supergroup, want 2", len(moved))
	}
	if moved[0].Params["text"] != e.api.sentTo(oldGroup)[0].Params["text"] {
		t.Fatal("the supergroup's first part is not the refused one")
	}
	if rp := moved[0].Params["reply_parameters"]; rp != "" {
		t.Fatalf("the resend threads under a message of the old group: %s", rp)
	}

	// The next reply to the old address goes straight to the supergroup.
	if err := c.Say(context.Background(), oldAddr, conversation.Reply{Text: "Approved r-1"}); err != nil {
		t.Fatalf("Say = %v", err)
	}
	if n := len(e.api.sentTo(oldGroup)); n != 1 {
		t.Fatalf("%d sends to the old group after the move was known, want 1", n)
	}
	if n := countContaining(e.api.sentTo(superGroup), "Approved r-1"); n != 1 {
		t.Fatalf("the next reply reached the supergroup %d times", n)
	}

	// A restart on the same store still knows the move.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o.Store = st
	restarted := e.channel(t, o)
	if err := restarted.Say(context.Background(), oldAddr, conversation.Reply{Text: "Rejected r-2"}); err != nil {
		t.Fatalf("Say after restart = %v", err)
	}
	if n := len(e.api.sentTo(oldGroup)); n != 1 {
		t.Fatalf("after a restart the reply tried the old group again")
	}
	if n := countContaining(e.api.sentTo(superGroup), "Rejected r-2"); n != 1 {
		t.Fatalf("after a restart the reply reached the supergroup %d times", n)
	}
	deliverytest.NoSecretInLogs(t, e.logs, testToken, oldGroup, superGroup)
}

func TestMigrationServiceMessagesAreRecorded(t *testing.T) {
	cases := []struct {
		name, update string
	}{
		{"migrate_to_chat_id in the old group", fmt.Sprintf(`{"update_id":60,"message":{"message_id":9,"date":1764464400,"from":{"id":42,"is_bot":false,"first_name":"Ada"},"chat":{"id":%s,"type":"group","title":"Team"},"migrate_to_chat_id":%s}}`, oldGroup, superGroup)},
		{"migrate_from_chat_id in the supergroup", fmt.Sprintf(`{"update_id":61,"message":{"message_id":1,"date":1764464400,"from":{"id":1087968824,"is_bot":true,"first_name":"Group","username":"GroupAnonymousBot"},"chat":{"id":%s,"type":"supergroup","title":"Team"},"migrate_from_chat_id":%s}}`, superGroup, oldGroup)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			upgraded(e.api)
			c := e.channel(t, e.options(ModeWebhook))
			if rec := postHook(t, c.WebhookHandler(), testSecret, tc.update); rec.Code != http.StatusOK {
				t.Fatalf("answer %d", rec.Code)
			}
			if n := len(e.h.messages()); n != 0 {
				t.Fatalf("a service message reached the conversation")
			}
			// A fresh channel on the same store: the mapping is in the
			// store, not only in the first channel's memory.
			fresh := e.channel(t, e.options(ModeWebhook))
			if err := fresh.Say(context.Background(), oldAddr, conversation.Reply{Text: "hello"}); err != nil {
				t.Fatalf("Say = %v", err)
			}
			if n := len(e.api.sentTo(oldGroup)); n != 0 {
				t.Fatalf("%d sends to the old group, want none", n)
			}
			if n := len(e.api.sentTo(superGroup)); n != 1 {
				t.Fatalf("%d sends to the supergroup, want 1", n)
			}
		})
	}
}

func TestRefusedRepliesAreNotResent(t *testing.T) {
	cases := []struct {
		name   string
		answer func(p map[string]string) (int, string)
		sends  int // sendMessage calls in all
	}{
		{"moved twice: the second move is not followed", func(p map[string]string) (int, string) {
			if p["chat_id"] == oldGroup {
				return migrateAnswer(superGroup)
			}
			return migrateAnswer(laterGroup)
		}, 2},
		{"migration to the same chat", func(map[string]string) (int, string) { return migrateAnswer(oldGroup) }, 1},
		{"other bad request", func(map[string]string) (int, string) { return apiFail(400, "Bad Request: chat not found") }, 1},
		{"forbidden", func(map[string]string) (int, string) {
			return apiFail(403, "Forbidden: bot was kicked from the group chat")
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.api.on("sendMessage", tc.answer)
			c := e.channel(t, e.options(ModeWebhook))
			err := c.Say(context.Background(), oldAddr, conversation.Reply{Text: "hello"})
			if !errors.Is(err, ErrSend) {
				t.Fatalf("Say = %v, want ErrSend", err)
			}
			if n := len(e.api.callsTo("sendMessage")); n != tc.sends {
				t.Fatalf("%d sends, want %d", n, tc.sends)
			}
			for _, id := range []string{oldGroup, superGroup, laterGroup} {
				if strings.Contains(err.Error(), id) {
					t.Fatalf("error names a chat (I10): %v", err)
				}
			}
			deliverytest.NoSecretInLogs(t, e.logs, testToken, oldGroup, superGroup, laterGroup)
		})
	}
}

func TestMigrationServiceMessageOfferedAgainWhenNotRecorded(t *testing.T) {
	e := newEnv(t)
	upgraded(e.api)
	update := fmt.Sprintf(`{"update_id":62,"message":{"message_id":9,"date":1764464400,"from":{"id":42,"is_bot":false,"first_name":"Ada"},"chat":{"id":%s,"type":"group","title":"Team"},"migrate_to_chat_id":%s}}`, oldGroup, superGroup)
	o := e.options(ModeWebhook)
	o.Store = &crashStore{Store: e.store, crash: func() {}} // every channel-state write fails
	down := e.channel(t, o)
	if rec := postHook(t, down.WebhookHandler(), testSecret, update); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("answer %d, want 503 so that Telegram offers the update again", rec.Code)
	}
	// Telegram's retry reaches a replica whose store works.
	up := e.channel(t, e.options(ModeWebhook))
	if rec := postHook(t, up.WebhookHandler(), testSecret, update); rec.Code != http.StatusOK {
		t.Fatalf("retry answered %d", rec.Code)
	}
	if err := e.channel(t, e.options(ModeWebhook)).Say(context.Background(), oldAddr, conversation.Reply{Text: "hello"}); err != nil {
		t.Fatalf("Say = %v", err)
	}
	if n := len(e.api.sentTo(oldGroup)); n != 0 {
		t.Fatalf("%d sends to the old group, want none", n)
	}
}
