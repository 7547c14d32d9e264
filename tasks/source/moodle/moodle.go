// Package moodle is the moodle source kind: a Moodle site read through its
// web-service REST endpoint with a web-service token sent in the form body
// (never in the URL, which may be logged). One run lists the enrolled
// courses, their assignments, the calendar's action events and, when
// asked for, the course files, each an item whose identity is
// moodle:<host>:<type>:<id> (docs/sources.md, Learning platforms). Whatever is
// watched, an assignment's submission state reaches its item (Done), so
// submitted work gets no reminder.
package moodle

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Name is the kind's name.
const Name = "moodle"

// What a moodle watch can list; an empty watch list means the first two.
const (
	Assignments = "assignments"
	Events      = "events"
	Files       = "files"
)

// endpoint is the web-service path under the site.
const endpoint = "/webservice/rest/server.php"

// Kind is the table entry for moodle.
var Kind = kind.Kind{
	Name:   Name,
	Accept: "application/json",
	// The run reads Moodle's exception objects itself.
	JSONObject: func(gjson.Result, watch.Spec) (bool, error) { return true, nil },
	Run:        run,
}

type client struct {
	g     kind.Getter
	site  *url.URL
	token string
}

// call POSTs one web-service function and returns its answer, turning an
// exception delivered with HTTP 200 into a classified failure.
func (c *client) call(ctx context.Context, fn string, args url.Values) (gjson.Result, error) {
	form := url.Values{"wstoken": {c.token}, "wsfunction": {fn}, "moodlewsrestformat": {"json"}}
	for k, vs := range args {
		form[k] = vs
	}
	doc, err := c.g.Do(ctx, kind.Request{Method: http.MethodPost, URL: c.site.JoinPath(endpoint), Form: form})
	if err != nil {
		return gjson.Result{}, err
	}
	if !gjson.ValidBytes(doc.Body) {
		return gjson.Result{}, watch.Errorf(watch.Schema, "moodle %s: the answer is not JSON", fn)
	}
	res := gjson.ParseBytes(doc.Body)
	if res.Get("exception").Exists() || res.Get("errorcode").Exists() {
		return gjson.Result{}, watch.Errorf(exceptionClass(res.Get("errorcode").String()), "moodle %s: %s", fn, res.Get("errorcode").String())
	}
	return res, nil
}

// exceptionClass classifies Moodle's errorcode values.
func exceptionClass(code string) watch.Class {
	switch code {
	case "invalidtoken", "accessexception", "usernotfullysetup", "invalidlogin", "forcepasswordchangenotice":
		return watch.Auth
	case "nopermissions", "requireloginerror", "servicerequireslogin", "webservicenotenabled":
		return watch.Permission
	case "invalidrecord", "invalidparameter":
		return watch.Schema
	}
	return watch.Schema
}

func run(ctx context.Context, g kind.Getter, in kind.Input) ([]watch.Item, error) {
	if strings.TrimSpace(in.Spec.Token) == "" {
		return nil, watch.Errorf(watch.Auth, "moodle: no web-service token")
	}
	c := &client{g: g, site: &url.URL{Scheme: in.URL.Scheme, Host: in.URL.Host, Path: strings.TrimSuffix(in.URL.Path, "/")}, token: in.Spec.Token}
	host := strings.ToLower(in.URL.Host)
	res, err := c.call(ctx, "core_course_get_enrolled_courses_by_timeline_classification", url.Values{"classification": {"inprogress"}})
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	var ids []int64
	for _, co := range res.Get("courses").Array() {
		id := co.Get("id").Int()
		if len(in.Spec.Courses) > 0 && !slices.Contains(in.Spec.Courses, strconv.FormatInt(id, 10)) {
			continue
		}
		names[id] = co.Get("fullname").String()
		ids = append(ids, id)
	}
	want := in.Spec.Watch
	if len(want) == 0 {
		want = []string{Assignments, Events}
	}
	var items []watch.Item
	if slices.Contains(want, Assignments) && len(ids) > 0 {
		args := url.Values{}
		for i, id := range ids {
			args.Set("courseids["+strconv.Itoa(i)+"]", strconv.FormatInt(id, 10))
		}
		res, err := c.call(ctx, "mod_assign_get_assignments", args)
		if err != nil {
			return nil, err
		}
		for _, co := range res.Get("courses").Array() {
			cname := names[co.Get("id").Int()]
			for _, a := range co.Get("assignments").Array() {
				items = append(items, watch.Item{
					ID:    "moodle:" + host + ":assignment:" + a.Get("id").String(),
					Title: cname + ": " + a.Get("name").String(),
					URL:   c.site.String() + "/mod/assign/view.php?id=" + a.Get("cmid").String(),
					Due:   unix(a.Get("duedate").Int()),
					Digest: kind.Digest(a.Get("name").String(), a.Get("duedate").String(), a.Get("cutoffdate").String(),
						a.Get("allowsubmissionsfromdate").String(), a.Get("grade").String()),
					Summary: watch.Summary(kind.HTMLText(a.Get("intro").String()), ""),
				})
			}
		}
	}
	if slices.Contains(want, Files) {
		for _, id := range ids {
			got, err := c.files(ctx, host, id, names[id])
			if err != nil {
				return nil, err
			}
			items = append(items, got...)
		}
	}
	watchEvents, watchAssignments := slices.Contains(want, Events), slices.Contains(want, Assignments)
	if watchEvents || watchAssignments {
		// The action events are read for the assignments' sake even when
		// events are not watched: an assignment's event that is no longer
		// actionable says it needs no more doing.
		res, err := c.call(ctx, "core_calendar_get_action_events_by_timesort", url.Values{
			"timesortfrom": {strconv.FormatInt(in.Now.Add(-14*24*time.Hour).Unix(), 10)},
			"limitnum":     {"50"},
		})
		if err != nil && (watchEvents || fatal(err)) {
			return nil, err
		}
		for _, e := range res.Get("events").Array() {
			// An action event whose action is no longer actionable is done.
			done := e.Get("action").Exists() && !e.Get("action.actionable").Bool()
			if e.Get("modulename").String() == "assign" && watchAssignments {
				// The assignment is already an item: the event only says
				// whether it still needs doing, so it is never reminded twice.
				if done {
					markDone(items, "moodle:"+host+":assignment:"+e.Get("instance").String())
				}
				continue
			}
			if !watchEvents {
				continue
			}
			items = append(items, watch.Item{
				ID:      "moodle:" + host + ":event:" + e.Get("id").String(),
				Title:   e.Get("course.fullname").String() + ": " + e.Get("name").String(),
				URL:     e.Get("url").String(),
				Due:     unix(e.Get("timesort").Int()),
				Done:    done,
				Digest:  kind.Digest(e.Get("name").String(), e.Get("timesort").String(), strconv.FormatBool(done)),
				Summary: watch.Summary(kind.HTMLText(e.Get("description").String()), ""),
			})
		}
	}
	if watchAssignments {
		if err := c.submitted(ctx, items, "moodle:"+host+":assignment:", in.Now); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// submitted asks mod_assign_get_submission_status about every assignment
// still to be reminded of (due later, not known to be done) and marks
// those whose submission, or whose team's, is submitted: a submitted
// assignment's action event disappears from the calendar rather than
// saying so, so the events cannot be relied on for it. A site whose token
// may not call the function (an access exception) is asked no further;
// an assignment it cannot answer for is left as it is. Only a failure
// worth retrying fails the run, which then keeps nothing.
func (c *client) submitted(ctx context.Context, items []watch.Item, prefix string, now time.Time) error {
	for i := range items {
		it := &items[i]
		id, ok := strings.CutPrefix(it.ID, prefix)
		if !ok || it.Done || it.Due.IsZero() || !now.Before(it.Due) {
			continue
		}
		res, err := c.call(ctx, "mod_assign_get_submission_status", url.Values{"assignid": {id}})
		if err != nil {
			if fatal(err) {
				return err
			}
			if watch.ClassOf(err) == watch.Auth {
				return nil // the token's service lacks the function
			}
			continue
		}
		last := res.Get("lastattempt")
		if last.Get("submission.status").String() == "submitted" || last.Get("teamsubmission.status").String() == "submitted" {
			it.Done = true
		}
	}
	return nil
}

// fatal reports a failure that must fail the run even where the answer
// was only a hint: one worth retrying, or the run being stopped.
func fatal(err error) bool {
	c := watch.ClassOf(err)
	return c == watch.Transient || c == watch.Cancelled
}

func markDone(items []watch.Item, id string) {
	for i := range items {
		if items[i].ID == id {
			items[i].Done = true
		}
	}
}

func unix(s int64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}
