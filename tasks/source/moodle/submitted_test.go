package moodle_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// submissionSite is a Moodle site whose assignments are due 20 hours after
// now: 7 submitted by the person, 8 not yet, 9 submitted by the person's
// team. As in Moodle, a submitted assignment's action event is gone from
// core_calendar_get_action_events_by_timesort, and
// mod_assign_get_submission_status says how the submission stands.
type submissionSite struct {
	srv    *httptest.Server
	mu     sync.Mutex
	calls  map[string]int
	status string // how mod_assign_get_submission_status answers: "", "access", "down"
}

var subNow = time.Date(2029, 12, 1, 0, 0, 0, 0, time.UTC)

func newSubmissionSite(t *testing.T) *submissionSite {
	s := &submissionSite{calls: map[string]int{}}
	due := subNow.Add(20 * time.Hour).Unix()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.Method != http.MethodPost || r.URL.Path != "/webservice/rest/server.php" || r.PostForm.Get("wstoken") != "ws-good" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fn := r.PostForm.Get("wsfunction")
		s.mu.Lock()
		s.calls[fn]++
		status := s.status
		s.mu.Unlock()
		switch fn {
		case "core_course_get_enrolled_courses_by_timeline_classification":
			fmt.Fprint(w, `{"courses":[{"id":5,"fullname":"Chemistry","shortname":"CH"}],"nextoffset":1}`)
		case "mod_assign_get_assignments":
			fmt.Fprintf(w, `{"courses":[{"id":5,"fullname":"Chemistry","assignments":[`+
				`{"id":7,"cmid":70,"course":5,"name":"Essay","duedate":%[1]d,"cutoffdate":0,"allowsubmissionsfromdate":0,"grade":100,"teamsubmission":0},`+
				`{"id":8,"cmid":80,"course":5,"name":"Lab report","duedate":%[1]d,"cutoffdate":0,"allowsubmissionsfromdate":0,"grade":100,"teamsubmission":0},`+
				`{"id":9,"cmid":90,"course":5,"name":"Group poster","duedate":%[1]d,"cutoffdate":0,"allowsubmissionsfromdate":0,"grade":100,"teamsubmission":1}]}],"warnings":[]}`, due)
		case "core_calendar_get_action_events_by_timesort":
			// Only the open assignment still has an action event.
			fmt.Fprintf(w, `{"events":[{"id":801,"name":"Lab report is due","modulename":"assign","instance":8,"eventtype":"due","timestart":%[1]d,"timesort":%[1]d,`+
				`"course":{"id":5,"fullname":"Chemistry"},"action":{"name":"Add submission","url":"%[2]s/mod/assign/view.php?id=80&action=editsubmission","itemcount":1,"actionable":true},"url":"%[2]s/mod/assign/view.php?id=80"}],"firstid":801,"lastid":801}`, due, s.srv.URL)
		case "mod_assign_get_submission_status":
			switch status {
			case "access":
				fmt.Fprint(w, `{"exception":"webservice_access_exception","errorcode":"accessexception","message":"Access control exception"}`)
				return
			case "down":
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			state, team := "new", "new"
			switch r.PostForm.Get("assignid") {
			case "7":
				state = "submitted"
			case "9":
				team = "submitted"
			}
			fmt.Fprintf(w, `{"lastattempt":{"submission":{"id":1,"userid":4,"attemptnumber":0,"status":%q,"groupid":0,"assignment":%s,"latest":1,"plugins":[]},`+
				`"teamsubmission":{"id":2,"userid":0,"attemptnumber":0,"status":%q,"groupid":3,"latest":1,"plugins":[]},`+
				`"submissiongroupmemberswhoneedtosubmit":[],"submissionsenabled":true,"locked":false,"graded":false,"canedit":true,"caneditowner":true,"cansubmit":true,`+
				`"extensionduedate":null,"timelimit":0,"blindmarking":false,"gradingstatus":"notgraded","usergroups":[]},"warnings":[]}`, state, r.PostForm.Get("assignid"), team)
		default:
			fmt.Fprint(w, `{"exception":"invalid_parameter_exception","errorcode":"invalidparameter","message":"Invalid parameter value detected"}`)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *submissionSite) fetch(t *testing.T) (watch.Result, error) {
	t.Helper()
	src, err := source.New(watch.Spec{Kind: "moodle", URL: s.srv.URL, Token: "ws-good", Watch: []string{"assignments"}},
		source.Options{AllowPrivate: true, Now: func() time.Time { return subNow }})
	if err != nil {
		t.Fatal(err)
	}
	return src.Fetch(context.Background(), watch.Conditional{})
}

// TestMoodleSubmittedAssignmentGetsNoReminder: with watch: [assignments]
// (events not watched), an assignment the person or their team submitted
// is done, so of three assignments due in 20 hours only the open one gets
// its 24-hour reminder.
func TestMoodleSubmittedAssignmentGetsNoReminder(t *testing.T) {
	site := newSubmissionSite(t)
	res, err := site.fetch(t)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(site.srv.URL, "http://")
	done := map[string]bool{}
	for _, it := range res.Items {
		done[strings.TrimPrefix(it.ID, "moodle:"+host+":")] = it.Done
	}
	if want := map[string]bool{"assignment:7": true, "assignment:8": false, "assignment:9": true}; fmt.Sprint(done) != fmt.Sprint(want) {
		t.Fatalf("done %v, want %v", done, want)
	}
	opts := watch.Options{RemindBefore: []time.Duration{24 * time.Hour}}
	d := watch.Compute(nil, res.Items, subNow, opts)
	var reminded []string
	for _, ev := range d.Events {
		if ev.Kind == watch.EventDeadline {
			reminded = append(reminded, ev.Item.Title)
		}
	}
	if len(reminded) != 1 || reminded[0] != "Chemistry: Lab report" {
		t.Fatalf("reminders for %q, want only the open lab report", reminded)
	}
}

// TestMoodleSubmissionStatusUnavailable: a token whose service may not
// call mod_assign_get_submission_status still lists the assignments (and
// asks once, not per assignment); a failure worth retrying fails the run
// rather than reminding of work that may be submitted.
func TestMoodleSubmissionStatusUnavailable(t *testing.T) {
	site := newSubmissionSite(t)
	site.status = "access"
	res, err := site.fetch(t)
	if err != nil || len(res.Items) != 3 {
		t.Fatalf("items %+v, err %v; want the three assignments", res.Items, err)
	}
	if n := site.calls["mod_assign_get_submission_status"]; n != 1 {
		t.Fatalf("asked %d times after an access exception, want once", n)
	}
	site.status = "down"
	_, err = site.fetch(t)
	if watch.ClassOf(err) != watch.Transient {
		t.Fatalf("err = %v, want transient", err)
	}
}
