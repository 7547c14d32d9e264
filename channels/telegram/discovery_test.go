package telegram

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/source/sourcetest"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestDiscovery_FeedOfferedAsButtonsBecomesTheTask: /watch on a page that
// advertises its feed with a relative <link rel="alternate"> answers with
// one inline button per feed; pressing one edits the offer into the
// request's answer, and the task watches the feed.
func TestDiscovery_FeedOfferedAsButtonsBecomesTheTask(t *testing.T) {
	const adminID = "10001"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/news/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><head><link rel="alternate" type="application/rss+xml" title="校园新闻" href="rss.xml"><link rel="alternate" type="application/atom+xml" title="Atom" href="/atom.xml"></head><body><p>News</p></body></html>`)
		case "/news/rss.xml":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>n</title><item><title>Library hours</title><link>https://news.example.edu/1</link></item></channel></rss>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	r := newChatRig(t, tasks.Policy{Admins: []string{"telegram:" + adminID}, AllowPrivate: true, Named: map[string]bool{}},
		func(*bolt.Store) tasks.SourceOpener {
			return tasks.SourceOpenerFunc(func(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
				return source.New(spec, source.Options{AllowPrivate: true, DefaultZone: zone})
			})
		}, func(_ *bolt.Store, o *conversation.Options) { o.Trier = sourcetest.Trier{} })
	api := r.api

	api.push(fmt.Sprintf(`{"update_id":700,"message":{"message_id":1,"date":1764464400,"from":{"id":%s,"is_bot":false,"first_name":"Grace","language_code":"en"},"chat":{"id":%s,"type":"private"},"text":"/watch %s/news/ every 1h"}}`,
		adminID, adminID, site.URL))
	waitFor(t, "the offer", func() bool { return len(api.sentTo(adminID)) == 1 })
	offer := api.sentTo(adminID)[0]
	kb := offer.Params["reply_markup"]
	data := regexp.MustCompile(`"callback_data":"(feed:d-[0-9a-f]+:1)"`).FindStringSubmatch(kb)
	if !strings.Contains(offer.Params["text"], "advertises feeds") || data == nil || !strings.Contains(kb, `feed:d-`) || strings.Count(kb, `"callback_data"`) != 2 {
		t.Fatalf("offer = %q\nkeyboard = %s", offer.Params["text"], kb)
	}
	if list, _ := r.m.List(context.Background(), ""); len(list) != 0 {
		t.Fatal("a task was made before a feed was chosen")
	}

	api.push(fmt.Sprintf(`{"update_id":701,"callback_query":{"id":"cb-feed","from":{"id":%s,"is_bot":false,"first_name":"Grace","language_code":"en"},"message":{"message_id":%s,"date":1764464400,"chat":{"id":%s,"type":"private"},"text":"offer"},"chat_instance":"9","data":"%s"}}`,
		adminID, offer.Params["_message_id"], adminID, data[1]))
	waitFor(t, "the offer edited into the answer", func() bool { return len(api.callsTo("editMessageText")) == 1 })
	if edit := api.callsTo("editMessageText")[0].Params; !strings.Contains(edit["text"], "Tried it: 1 item") || !strings.Contains(edit["text"], "Approved") {
		t.Fatalf("edit = %v", edit)
	}
	list, err := r.m.List(context.Background(), "")
	if err != nil || len(list) != 1 || list[0].Source.URL != site.URL+"/news/rss.xml" || list[0].Source.Kind != source.KindRSS {
		t.Fatalf("tasks = %+v %v", list, err)
	}
}
