package feishu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/transfer"
	"github.com/herald-bridge/herald/tasks/transfer/transfertest"
)

// fileEvent builds an im.message.receive_v1 event of a file message.
func fileEvent(eventID, messageID, chatID, chatType, key, name string) []byte {
	raw := messageEvent(testToken, eventID, messageID, chatID, chatType, "")
	var ev map[string]any
	_ = json.Unmarshal(raw, &ev)
	msg := ev["event"].(map[string]any)["message"].(map[string]any)
	content, _ := json.Marshal(map[string]string{"file_key": key, "file_name": name})
	msg["message_type"], msg["content"] = "file", string(content)
	b, _ := json.Marshal(ev)
	return b
}

// TestI8_FileSentInPrivateIsImportedAsRequests: an OPML file sent to the
// bot in a private Feishu chat is fetched from the message resource
// endpoint with the tenant token and imported as the sender's requests,
// the table coming back as the reply; a file in a group is not fetched.
func TestI8_FileSentInPrivateIsImportedAsRequests(t *testing.T) {
	m, st := transfertest.Manager(t, tasks.Policy{Requesters: []string{"feishu:*"}, AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{}})
	core, err := conversation.New(conversation.Options{Tasks: m, Store: st, Log: zerolog.Nop(), Importer: transfer.Files{M: m}})
	if err != nil {
		t.Fatal(err)
	}
	r := newTestChannel(t, false, func(o *Options) { o.Handler = core })
	opml := `<?xml version="1.0" encoding="UTF-8"?><opml version="2.0"><body><outline text="校园" ><outline type="rss" text="图书馆" xmlUrl="https://library.example.edu/rss"/></outline></body></opml>`
	r.fake.mu.Lock()
	r.fake.files["om_file1/file_v3_abc"] = []byte(opml)
	r.fake.files["om_file2/file_v3_grp"] = []byte(opml)
	r.fake.mu.Unlock()

	if w := r.postEvent(fileEvent("ev-f1", "om_file1", chatP2P, "p2p", "file_v3_abc", "feeds.opml")); w.Code != 200 {
		t.Fatalf("event answered %d", w.Code)
	}
	got := sentTo(r.fake, chatP2P)
	if len(got) != 1 || !strings.Contains(got[0].Content, "Imported 1 of 1") || !strings.Contains(got[0].Content, "校园 / 图书馆") {
		t.Fatalf("replies: %+v", got)
	}
	list, _ := m.List(context.Background(), "")
	if len(list) != 1 || list[0].Owner != "feishu:"+aliceOpenID || list[0].State != tasks.Active || strings.Join(list[0].Notify, ",") != "feishu:chat:"+chatP2P {
		t.Fatalf("tasks: %+v", list)
	}

	r.postEvent(fileEvent("ev-f2", "om_file2", chatGroup, "group", "file_v3_grp", "feeds.opml"))
	r.fake.mu.Lock()
	downloads := r.fake.downloads
	r.fake.mu.Unlock()
	if downloads != 1 || len(sentTo(r.fake, chatGroup)) != 0 {
		t.Errorf("a group's file was fetched (%d downloads) or answered", downloads)
	}
}
