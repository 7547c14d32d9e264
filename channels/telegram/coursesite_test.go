package telegram

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/memory"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// courseSite is a Canvas site on loopback: the courses, assignments,
// announcements and files lists answered (one page, with the while(1);
// prefix) only to the one Bearer token it knows; anything else is the
// 401 with WWW-Authenticate and the invalid-token body.
type courseSite struct {
	srv     *httptest.Server
	token   atomic.Value // string
	bearers atomic.Int64 // requests that carried the right token
}

func newCourseSite(t *testing.T, token string) *courseSite {
	c := &courseSite{}
	c.token.Store(token)
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+c.token.Load().(string) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="canvas-lms"`)
			http.Error(w, `{"errors":[{"message":"Invalid access token."}]}`, http.StatusUnauthorized)
			return
		}
		c.bearers.Add(1)
		body := map[string]string{
			"/api/v1/courses":                   `{"id":12345,"name":"Signals"},{"id":999,"name":"Not watched"}`,
			"/api/v1/courses/12345/assignments": `{"id":7,"name":"Problem set 3","due_at":"2026-12-20T23:59:00Z","submission":{"workflow_state":"unsubmitted"}}`,
			"/api/v1/announcements":             ``,
			"/api/v1/courses/12345/files":       `{"id":70,"display_name":"slides.pdf","size":2048,"modified_at":"2026-11-01T08:00:00Z"}`,
		}
		rows, ok := body[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(w, "while(1);["+rows+"]")
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// TestI10_CanvasTokenGivenInATelegramChat walks "/watch canvas" as a
// person meets it in Telegram: in a group herald says to go private; in
// the private chat it asks for the token, deletes the message carrying it
// (deleteMessage), keeps it as the person's credential and sends the
// request on; once approved, the source reads the token from the
// credential store at run time. The token appears in no reply, log line,
// history turn, task record or /task; a revoked token is the auth failure.
func TestI10_CanvasTokenGivenInATelegramChat(t *testing.T) {
	const (
		adminID = 10001
		userID  = 42 // groupText's sender
		tok     = "7~KzT0kenValueFromCanvas5551234abcd"
	)
	site := newCourseSite(t, tok)
	r := newChatRig(t, tasks.Policy{
		Admins: []string{fmt.Sprintf("telegram:%d", adminID)}, Requesters: []string{"telegram:*"},
		AllowPrivate: true, Named: map[string]bool{},
	}, func(st *bolt.Store) tasks.SourceOpener {
		creds := credentials.New(st.Channels())
		return tasks.SourceOpenerFunc(func(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
			return source.New(spec, source.Options{AllowPrivate: true, DefaultZone: zone, Token: creds.Resolver(spec.TokenFrom, spec.URL)})
		})
	}, func(st *bolt.Store, o *conversation.Options) {
		k, err := memory.New(memory.Options{Store: st.History()})
		if err != nil {
			t.Fatal(err)
		}
		o.Memory = k
	})
	api := r.api
	user := fmt.Sprint(userID)
	watchCmd := "/watch@" + testUsername + " canvas " + site.srv.URL + " courses 12345 every 1h"

	// In a group: go private, nothing asked, nothing kept.
	api.push(groupText(700, watchCmd, ""))
	waitFor(t, "the group's answer", func() bool { return len(api.sentTo("-1001234")) == 1 })
	if got := api.sentTo("-1001234")[0].Params["text"]; !strings.Contains(got, "私聊") || !strings.Contains(got, "/watch canvas "+site.srv.URL) { // the sender's language_code is zh-hans
		t.Fatalf("group answer %q", got)
	}

	// In private: asked for the token; the token's message is deleted.
	api.push(privateText(701, userID, strings.Replace(watchCmd, "@"+testUsername, "", 1)))
	waitFor(t, "the question", func() bool { return countContaining(api.sentTo(user), "access token") == 1 })
	api.push(privateText(702, userID, tok))
	waitFor(t, "the request", func() bool { return countContaining(api.sentTo(user), "Request r-") == 1 })
	del := api.callsTo("deleteMessage")
	if len(del) != 1 || del[0].Params["chat_id"] != user || del[0].Params["message_id"] != "1702" {
		t.Fatalf("deleteMessage calls %v, want the token's message 1702 in chat %s", del, user)
	}
	rid := reRequest.FindString(api.sentTo(user)[len(api.sentTo(user))-1].Params["text"])

	// The admin approves; the first run reads the site with the stored token.
	api.push(privateText(703, adminID, "/approve "+rid))
	waitFor(t, "the baseline", func() bool { return countContaining(api.sentTo(user), "Now watching") == 1 })
	if site.bearers.Load() == 0 {
		t.Fatal("the site never saw the token")
	}
	list, err := r.m.List(context.Background(), "")
	if err != nil || len(list) != 1 || list[0].Source.Token != "" || list[0].Source.TokenFrom != "telegram:"+user {
		t.Fatalf("tasks %+v %v", list, err)
	}
	id := list[0].ID
	api.push(privateText(704, userID, "/task "+id))
	waitFor(t, "/task", func() bool { return countContaining(api.sentTo(user), "given in chat") == 1 })

	// A revoked token is the auth failure, shown without the token.
	site.token.Store("revoked")
	api.push(privateText(705, userID, "/run "+id))
	waitFor(t, "the failed run", func() bool { return countContaining(api.sentTo(user), "auth") >= 1 })

	var seen []string
	for _, c := range api.callsTo("sendMessage") {
		seen = append(seen, c.Params["text"])
	}
	turns, err := r.st.History().List(context.Background(), "telegram:"+user, store.HistoryQuery{Limit: 100})
	if err != nil || len(turns) == 0 {
		t.Fatalf("history: %d turns, %v", len(turns), err)
	}
	for _, tn := range turns {
		seen = append(seen, tn.Text, tn.Reply)
	}
	rec, err := r.st.Catalog().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, string(rec.Value), r.logs.String())
	for _, s := range seen {
		if strings.Contains(s, "T0kenValue") {
			t.Fatalf("the token shows in %q", s)
		}
	}
}
