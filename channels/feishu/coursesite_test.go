package feishu

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// moodleSite is a Moodle site on loopback: the web-service endpoint with
// the token in the form body, answering invalidtoken inside HTTP 200 to
// any other token.
func moodleSite(t *testing.T, token string, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || r.URL.Path != "/webservice/rest/server.php" || r.ParseForm() != nil {
			http.NotFound(w, r)
			return
		}
		if r.PostForm.Get("wstoken") != token {
			fmt.Fprint(w, `{"exception":"moodle_exception","errorcode":"invalidtoken","message":"Invalid token - token not found"}`)
			return
		}
		calls.Add(1)
		switch r.PostForm.Get("wsfunction") {
		case "core_course_get_enrolled_courses_by_timeline_classification":
			fmt.Fprint(w, `{"courses":[{"id":5,"fullname":"Signals"}],"nextoffset":1}`)
		case "mod_assign_get_assignments":
			fmt.Fprint(w, `{"courses":[{"id":5,"assignments":[{"id":9,"cmid":90,"name":"Problem set 3","duedate":1797000000}]}],"warnings":[]}`)
		default:
			fmt.Fprint(w, `{"events":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestI10_MoodleTokenGivenInAFeishuChat walks "/watch moodle" in Feishu:
// a group is told to go private; in the p2p chat herald asks for the
// token, tries to recall the message carrying it (the platform refuses a
// bot's recall of a person's message there, so the person is asked to),
// keeps it as the person's credential and sends the request on; once the
// admin's card approves it, the first run reads the site with the token
// from the credential store. No reply or log line carries the token.
func TestI10_MoodleTokenGivenInAFeishuChat(t *testing.T) {
	const tok = "9f3c2b1a8e7d6c5b4a3f2e1d0c9b8a7f"
	var calls atomic.Int64
	site := moodleSite(t, tok, &calls)
	r := newConvRig(t, func(st *bolt.Store) tasks.SourceOpener {
		creds := credentials.New(st.Channels())
		return tasks.SourceOpenerFunc(func(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
			return source.New(spec, source.Options{AllowPrivate: true, DefaultZone: zone, Token: creds.Resolver(spec.TokenFrom, spec.URL)})
		})
	})
	watchCmd := "/watch moodle " + site.URL + " every 1h"

	r.post(t, messageEvent(testToken, "ev-grp", "om_grp1", chatGroup, "group", "@_user_1 "+watchCmd, mention{"@_user_1", botOpenID, "herald"}))
	waitFor(t, "the group's answer", func() bool { return len(sentTo(r.fake, chatGroup)) == 1 })
	if got := sentTo(r.fake, chatGroup)[0].Content; !strings.Contains(got, "private chat") {
		t.Fatalf("group answer %s", got)
	}

	r.post(t, messageEvent(testToken, "ev-ask", "om_ask1", chatP2P, "p2p", watchCmd))
	waitFor(t, "the question", func() bool { return countTitle(r.fake, chatP2P, "access token") == 1 })
	r.post(t, messageEvent(testToken, "ev-tok", "om_tok1", chatP2P, "p2p", tok))
	waitFor(t, "the request", func() bool { return countTitle(r.fake, chatP2P, "Request r-") == 1 })
	if got := r.fake.recalled(); len(got) != 1 || got[0] != "om_tok1" {
		t.Fatalf("recalls %v, want the token's message", got)
	}
	if countTitle(r.fake, chatP2P, "delete it yourself") != 1 {
		t.Fatal("the person was not asked to recall the message the platform would not")
	}
	var rid string
	for _, s := range sentTo(r.fake, chatP2P) {
		if id := regexp.MustCompile(`r-[0-9a-f]{6}`).FindString(s.Content); id != "" {
			rid = id
		}
	}

	r.post(t, cardEvent(testToken, "ev-approve", adminOpenID, chatAdmin, "om_prompt", map[string]string{"action": "approve", "arg": rid}))
	waitFor(t, "the baseline", func() bool { return countTitle(r.fake, chatP2P, "Now watching") == 1 })
	if calls.Load() == 0 {
		t.Fatal("the site never saw the token")
	}
	list, err := r.m.List(context.Background(), "")
	if err != nil || len(list) != 1 || list[0].Source.Token != "" || list[0].Source.TokenFrom != "feishu:"+aliceOpenID {
		t.Fatalf("tasks %+v %v", list, err)
	}
	var all []string
	for _, s := range r.fake.sent() {
		all = append(all, s.Content)
	}
	if s := strings.Join(all, "\n") + r.logs.String(); strings.Contains(s, tok) {
		t.Fatalf("the token shows in what was sent or logged:\n%s", s)
	}
}
