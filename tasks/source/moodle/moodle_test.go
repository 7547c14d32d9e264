package moodle_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// fakeMoodle answers the web-service functions as Moodle does: POST form
// with wstoken, and exceptions inside HTTP 200.
func fakeMoodle(t *testing.T, good string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/webservice/rest/server.php" || r.URL.Query().Get("wstoken") != "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_ = r.ParseForm()
		if r.PostForm.Get("wstoken") != good {
			fmt.Fprint(w, `{"exception":"moodle_exception","errorcode":"invalidtoken","message":"Invalid token - token not found"}`)
			return
		}
		switch r.PostForm.Get("wsfunction") {
		case "core_course_get_enrolled_courses_by_timeline_classification":
			fmt.Fprint(w, `{"courses":[{"id":5,"fullname":"Chemistry"}],"nextoffset":1}`)
		case "mod_assign_get_assignments":
			if r.PostForm.Get("courseids[0]") != "5" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			fmt.Fprint(w, `{"courses":[{"id":5,"assignments":[{"id":7,"cmid":70,"name":"Essay","duedate":1893456000,"cutoffdate":0},{"id":8,"cmid":80,"name":"Quiz prep","duedate":1893456000}]}],"warnings":[]}`)
		case "core_calendar_get_action_events_by_timesort":
			fmt.Fprint(w, `{"events":[{"id":90,"name":"Essay is due","modulename":"assign","instance":7,"timesort":1893456000,"action":{"actionable":false}},{"id":91,"name":"Forum post","modulename":"forum","instance":3,"timesort":1893456000,"course":{"fullname":"Chemistry"},"action":{"actionable":true}}]}`)
		default:
			fmt.Fprint(w, `{"exception":"invalid_parameter_exception","errorcode":"invalidparameter","message":"Invalid parameter value detected"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func fetch(t *testing.T, url, tok string) (watch.Result, error) {
	s, err := source.New(watch.Spec{Kind: "moodle", URL: url, Token: tok}, source.Options{AllowPrivate: true,
		Now: func() time.Time { return time.Date(2029, 12, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return s.Fetch(context.Background(), watch.Conditional{})
}

func TestMoodleListsAssignmentsAndEventsOnce(t *testing.T) {
	srv := fakeMoodle(t, "ws-good")
	res, err := fetch(t, srv.URL, "ws-good")
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	got := map[string]watch.Item{}
	for _, it := range res.Items {
		got[it.ID] = it
	}
	if len(got) != 3 {
		t.Fatalf("items %v, want two assignments and one forum event (the assignment's event is not a second item)", got)
	}
	essay := got["moodle:"+host+":assignment:7"]
	if !essay.Done || essay.Title != "Chemistry: Essay" || essay.Due.Unix() != 1893456000 {
		t.Fatalf("essay = %+v, want done (its action event is no longer actionable)", essay)
	}
	if got["moodle:"+host+":assignment:8"].Done {
		t.Fatal("an open assignment is done")
	}
}

func TestI6_MoodleInvalidTokenInHTTP200IsAuth(t *testing.T) {
	srv := fakeMoodle(t, "ws-good")
	_, err := fetch(t, srv.URL, "ws-revoked")
	if watch.ClassOf(err) != watch.Auth || strings.Contains(err.Error(), "ws-revoked") {
		t.Fatalf("err = %v, want class auth without the token", err)
	}
}
