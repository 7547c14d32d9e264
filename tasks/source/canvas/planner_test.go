package canvas_test

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

var plannerNow = time.Date(2029, 12, 1, 0, 0, 0, 0, time.UTC)

// plannerSite is a Canvas site with one course and one assignment due 20
// hours after now, whose submission (include[]=submission) and planner
// item (/api/v1/planner/items) the case sets.
func plannerSite(t *testing.T, submission, plannerRow string, plannerStatus int) *httptest.Server {
	due := plannerNow.Add(20 * time.Hour).Format(time.RFC3339)
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="canvas-lms"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"message":"Invalid access token."}]}`)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		var rows []string
		switch r.URL.Path {
		case "/api/v1/courses":
			rows = []string{`{"id":1,"name":"Algebra","workflow_state":"available"}`}
		case "/api/v1/courses/1/assignments":
			if r.URL.Query().Get("include[]") != "submission" {
				t.Errorf("assignments asked without include[]=submission: %s", r.URL.RawQuery)
			}
			rows = []string{fmt.Sprintf(`{"id":11,"name":"Homework 4","due_at":%q,"lock_at":null,"unlock_at":null,"points_possible":10,`+
				`"has_overrides":false,"html_url":"%s/courses/1/assignments/11","is_quiz_assignment":true,"quiz_id":77,"submission":%s}`, due, srv.URL, submission)}
		case "/api/v1/planner/items":
			if r.URL.Query().Get("start_date") == "" || r.URL.Query().Get("end_date") == "" {
				t.Errorf("planner asked without a window: %s", r.URL.RawQuery)
			}
			if plannerStatus != 0 {
				w.WriteHeader(plannerStatus)
				fmt.Fprint(w, `{"errors":[{"message":"The specified resource does not exist."}]}`)
				return
			}
			if plannerRow != "" {
				rows = []string{plannerRow}
			}
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errors":[{"message":"The specified resource does not exist."}]}`)
			return
		}
		fmt.Fprint(w, "while(1);["+strings.Join(rows, ",")+"]")
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestCanvasDoneWorkGetsNoReminder: an assignment due in 20 hours that is
// submitted, excused, marked complete in the person's planner, or
// submitted as the quiz the planner names it by, is done and gets no 24-
// hour reminder; an unsubmitted one, or one the teacher asked to redo,
// gets it.
func TestCanvasDoneWorkGetsNoReminder(t *testing.T) {
	const unsubmitted = `{"assignment_id":11,"workflow_state":"unsubmitted","submitted_at":null,"excused":null,"missing":false}`
	plannerRow := func(typ, id, override, subs string) string {
		return fmt.Sprintf(`{"context_type":"Course","course_id":1,"plannable_id":%s,"plannable_type":%q,"new_activity":false,`+
			`"planner_override":%s,"submissions":%s,"plannable_date":"2029-12-01T20:00:00Z",`+
			`"plannable":{"id":%s,"title":"Homework 4","assignment_id":11,"points_possible":10,"due_at":"2029-12-01T20:00:00Z"},"html_url":"/courses/1/quizzes/77"}`,
			id, typ, override, subs, id)
	}
	const notSubmitted = `{"submitted":false,"excused":false,"graded":false,"late":false,"missing":false,"needs_grading":false,"has_feedback":false,"redo_request":false}`
	cases := []struct {
		name       string
		submission string
		planner    string
		status     int
		done       bool
	}{
		{"unsubmitted", unsubmitted, plannerRow("assignment", "11", "null", notSubmitted), 0, false},
		{"submitted", `{"assignment_id":11,"workflow_state":"submitted","submitted_at":"2029-11-30T10:00:00Z","excused":null}`, "", 0, true},
		{"excused", `{"assignment_id":11,"workflow_state":"unsubmitted","submitted_at":null,"excused":true}`, "", 0, true},
		{"marked complete in the planner", unsubmitted,
			plannerRow("assignment", "11", `{"id":5,"plannable_type":"assignment","plannable_id":11,"user_id":3,"workflow_state":"active","marked_complete":true,"dismissed":false}`, notSubmitted), 0, true},
		{"quiz submitted", unsubmitted, plannerRow("quiz", "77", "null", strings.Replace(notSubmitted, `"submitted":false`, `"submitted":true`, 1)), 0, true},
		{"excused in the planner", unsubmitted, plannerRow("assignment", "11", "null", strings.Replace(notSubmitted, `"excused":false`, `"excused":true`, 1)), 0, true},
		{"redo asked", unsubmitted, plannerRow("assignment", "11", "null",
			strings.NewReplacer(`"submitted":false`, `"submitted":true`, `"redo_request":false`, `"redo_request":true`).Replace(notSubmitted)), 0, false},
		{"no planner on this site", unsubmitted, "", http.StatusNotFound, false},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			srv := plannerSite(t, tt.submission, tt.planner, tt.status)
			s, err := source.New(watch.Spec{Kind: "canvas", URL: srv.URL, Token: token, Watch: []string{"assignments"}},
				source.Options{AllowPrivate: true, Now: func() time.Time { return plannerNow }})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Fetch(context.Background(), watch.Conditional{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != 1 || res.Items[0].Done != tt.done {
				t.Fatalf("items %+v, want one with done=%v", res.Items, tt.done)
			}
			d := watch.Compute(nil, res.Items, plannerNow, watch.Options{RemindBefore: []time.Duration{24 * time.Hour}})
			reminded := 0
			for _, ev := range d.Events {
				if ev.Kind == watch.EventDeadline {
					reminded++
				}
			}
			if want := map[bool]int{false: 1, true: 0}[tt.done]; reminded != want {
				t.Fatalf("%d reminders, want %d", reminded, want)
			}
		})
	}
}
