package feishu

import (
	"encoding/json"
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

// TestDiscovery_FeedOfferedOnACardBecomesTheRequest: /watch on a page that
// advertises a feed (relative href) answers with a card, one button per
// feed; the pressed button's answer is the request for that feed.
func TestDiscovery_FeedOfferedOnACardBecomesTheRequest(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jwc/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><head><link rel="alternate" type="application/rss+xml" title="教务通知" href="feed.xml"></head><body>hi</body></html>`)
		case "/jwc/feed.xml":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>n</title><item><title>选课通知</title><link>https://jwc.example.edu/1</link></item></channel></rss>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	r := newConvRig(t, func(*bolt.Store) tasks.SourceOpener {
		return tasks.SourceOpenerFunc(func(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
			return source.New(spec, source.Options{AllowPrivate: true, DefaultZone: zone})
		})
	}, func(o *conversation.Options) { o.Trier = sourcetest.Trier{} })

	r.post(t, messageEvent(testToken, "ev-page", "om_page", chatP2P, "p2p", "/watch "+site.URL+"/jwc/ every 1h"))
	var arg string
	waitFor(t, "the offer card", func() bool {
		for _, s := range sentTo(r.fake, chatP2P) {
			if m := regexp.MustCompile(`"action":"feed","arg":"(d-[0-9a-f]+:1)"`).FindStringSubmatch(s.Content); s.MsgType == "interactive" && m != nil {
				arg = m[1]
				return true
			}
		}
		return false
	})

	w := r.post(t, cardEvent(testToken, "ev-press", aliceOpenID, chatP2P, "om_offer", map[string]string{"action": "feed", "arg": arg}))
	var resp struct{ Card *json.RawMessage }
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Card == nil || !strings.Contains(string(*resp.Card), "Tried it: 1 item") {
		t.Fatalf("press answered %s", w.Body)
	}
	reqID := regexp.MustCompile(`r-[0-9a-f]{6}`).FindString(string(*resp.Card))
	if tk := findTask(t, r.m, reqID); tk.Source.URL != site.URL+"/jwc/feed.xml" || tk.Source.Kind != source.KindRSS {
		t.Fatalf("requested source = %+v", tk.Source)
	}
}
