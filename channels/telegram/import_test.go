package telegram

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/transfer"
	"github.com/herald-bridge/herald/tasks/transfer/transfertest"
)

const importOPML = `<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0"><body>
<outline text="Campus"><outline type="rss" text="Library" xmlUrl="https://library.example.edu/rss"/></outline>
<outline type="rss" text="Elsewhere" xmlUrl="https://blog.example.org/rss"/>
</body></opml>`

func documentUpdate(id int, from, chat, chatType, fileID, name string, size int) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1764464400,"from":{"id":%s,"is_bot":false,"first_name":"Ada","language_code":"en"},"chat":{"id":%s,"type":%q},"document":{"file_id":%q,"file_unique_id":"u%d","file_name":%q,"mime_type":"application/octet-stream","file_size":%d}}}`,
		id, id, from, chat, chatType, fileID, id, name, size)
}

// TestI8_DocumentSentInPrivateIsImportedAsRequests: an OPML file sent to
// the bot in a private chat is fetched through getFile and the file
// endpoint, each feed becomes the sender's request under the policy, and
// the reply is the table. A hostile bundle is refused with its reason and
// changes nothing; a pdf, or a document in a group, is not even downloaded.
func TestI8_DocumentSentInPrivateIsImportedAsRequests(t *testing.T) {
	const person = "20002"
	api := newFakeAPI(t)
	m, st := transfertest.Manager(t, tasks.Policy{Requesters: []string{"telegram:*"}, AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{}})
	core, err := conversation.New(conversation.Options{Tasks: m, Store: st, BotName: testUsername, Log: zerolog.Nop(), Importer: transfer.Files{M: m}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := New(Options{Token: testToken, APIURL: api.srv.URL, Handler: core, Store: st, Holder: "replica-a", Log: zerolog.Nop(),
		PollTimeout: 2 * time.Second, LeaseTTL: time.Hour, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ch.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	tasksOf := func() []*tasks.Task { list, _ := m.List(context.Background(), ""); return list }

	api.addFile("F-opml", []byte(importOPML))
	api.push(documentUpdate(700, person, person, "private", "F-opml", "feeds.opml", len(importOPML)))
	waitFor(t, "the import's answer", func() bool { return len(api.sentTo(person)) == 1 })
	reply := api.sentTo(person)[0].Params["text"]
	for _, want := range []string{"Imported 2 of 2", "Campus / Library — imported (active", "Elsewhere — imported (awaiting approval"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply lacks %q:\n%s", want, reply)
		}
	}
	list := tasksOf()
	if len(list) != 2 {
		t.Fatalf("%d tasks after the import", len(list))
	}
	for _, tk := range list {
		if tk.Owner != "telegram:"+person || strings.Join(tk.Notify, ",") != "telegram:chat:"+person || tk.Request.Name != "Ada" {
			t.Errorf("imported task %+v", tk)
		}
	}

	hostile := transfertest.HostileBundle(t, "https://sneaky.example.edu/feed", "/etc/cron.d/evil")
	api.addFile("F-zip", hostile)
	api.push(documentUpdate(701, person, person, "private", "F-zip", "tasks.zip", len(hostile)))
	waitFor(t, "the refusal", func() bool { return len(api.sentTo(person)) == 2 })
	if reply := api.sentTo(person)[1].Params["text"]; !strings.Contains(reply, "refused") || !strings.Contains(reply, "absolute path") || !strings.Contains(reply, "Nothing was imported") {
		t.Errorf("refusal reply:\n%s", reply)
	}
	if n := len(tasksOf()); n != 2 {
		t.Fatalf("a refused bundle changed the tasks: %d", n)
	}

	api.addFile("F-pdf", []byte("%PDF-1.7"))
	api.push(documentUpdate(702, person, person, "private", "F-pdf", "timetable.pdf", 8))
	waitFor(t, "the answer to a pdf", func() bool { return len(api.sentTo(person)) == 3 })
	if reply := api.sentTo(person)[2].Params["text"]; !strings.Contains(reply, "neither") {
		t.Errorf("answer to a pdf:\n%s", reply)
	}

	api.addFile("F-group", []byte(importOPML))
	api.push(documentUpdate(703, person, "-100555", "supergroup", "F-group", "feeds.opml", len(importOPML)))
	api.push(fmt.Sprintf(`{"update_id":704,"message":{"message_id":704,"date":1764464400,"from":{"id":%s,"is_bot":false,"first_name":"Ada"},"chat":{"id":%s,"type":"private"},"text":"/tasks"}}`, person, person))
	waitFor(t, "the answer after the group's document", func() bool { return len(api.sentTo(person)) == 4 })
	if n := len(api.callsTo("getFile")); n != 2 {
		t.Errorf("getFile called %d times; neither the pdf nor the group's document may be fetched", n)
	}
	if n := len(api.sentTo("-100555")); n != 0 {
		t.Errorf("the group got %d answers", n)
	}
	api.mu.Lock()
	calls := append([]call(nil), api.calls...)
	api.mu.Unlock()
	for _, c := range calls {
		for _, v := range c.Params {
			if strings.Contains(v, testToken) {
				t.Errorf("the token went out in a parameter of %s", c.Method)
			}
		}
	}
}
