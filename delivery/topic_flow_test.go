package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// forumAPI is a Bot API server for one forum group: topic 77 is open,
// topic 78 closed, any other thread missing (General, 1, included: it is
// posted to without message_thread_id).
type forumAPI struct {
	*httptest.Server
	mu      sync.Mutex
	threads []string // message_thread_id of each sendMessage ("" none)
}

func newForumAPI(t *testing.T) *forumAPI {
	f := &forumAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.EqualFold(r.URL.Path, "/bot"+botToken+"/sendMessage") {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("bad multipart body: %v", err)
		}
		thread := r.FormValue("message_thread_id")
		f.mu.Lock()
		f.threads = append(f.threads, thread)
		n := len(f.threads)
		f.mu.Unlock()
		fail := func(desc string) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"ok":false,"error_code":400,"description":%q}`, desc)
		}
		switch thread {
		case "", "77":
			fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764464400,"chat":{"id":%s,"type":"supergroup","is_forum":true},"text":"x"}}`,
				100+n, r.FormValue("chat_id"))
		case "78":
			fail("Bad Request: TOPIC_CLOSED")
		default:
			fail("Bad Request: message thread not found")
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *forumAPI) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.threads...)
}

// TestI3_TelegramClosedOrMissingTopicFailsOnceWithoutGeneral: a push to a
// closed or missing forum topic ends failed with the reason after one
// request, is never retried, and never lands in the General topic; an
// open topic and General itself are delivered.
func TestI3_TelegramClosedOrMissingTopicFailsOnceWithoutGeneral(t *testing.T) {
	r := newRig(t)
	api := newForumAPI(t)
	var unreachable []string
	var mu sync.Mutex
	r.start(telegramRoute(t, api.URL), "w", func(o *delivery.Options) {
		o.Hooks.Unreachable = func(_ context.Context, _, recipient, reason string) {
			mu.Lock()
			unreachable = append(unreachable, recipient+" "+reason)
			mu.Unlock()
		}
	})
	msg := delivery.Message{Kind: delivery.KindInbound, Title: "Lecture 5 notes", OccurredAt: t0}
	cases := []struct {
		to     string
		want   store.EffectState
		reason string
	}{
		{"telegram:chat:-1001234:topic:77", store.Completed, ""},
		{"telegram:chat:-1001234:topic:1", store.Completed, ""},
		{"telegram:chat:-1001234:topic:78", store.Failed, "topic_closed"},
		{"telegram:chat:-1001234:topic:79", store.Failed, "topic_not_found"},
	}
	for i, c := range cases {
		key := r.admit("hook:ci", fmt.Sprintf("note-%d", i), c.to, msg, 0)
		fx := r.settled(key, c.want)
		if fx.Error != c.reason || len(fx.Attempts) != 1 {
			t.Errorf("%s: %s (%s) after %d attempts, want %s (%s) after 1", c.to, fx.State, fx.Error, len(fx.Attempts), c.want, c.reason)
		}
	}
	r.advance(time.Hour) // nothing comes back for another try
	if got, want := api.sent(), []string{"77", "", "78", "79"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("threads sent to %q, want %q (one request each; General without a thread id)", got, want)
	}
	// The owner is told just after the push settles.
	const want = "telegram:chat:-1001234:topic:78 topic_closed,telegram:chat:-1001234:topic:79 topic_not_found"
	told := func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(unreachable, ",") }
	waitFor(t, func() bool { return told() == want }, "the owners told of both closed and missing topics")
}
