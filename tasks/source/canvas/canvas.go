// Package canvas is the canvas source kind: a Canvas LMS site read through
// its REST API with a personal access token. One run lists the person's
// courses and, per course, the assignments (with the caller's submission,
// and the planner's word on which are done), announcements and files, each an item whose identity is
// canvas:<host>:<type>:<id> and whose digest covers only what a person
// cares about, never signed URLs (docs/sources.md, Learning platforms).
package canvas

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Name is the kind's name.
const Name = "canvas"

// What a canvas watch can list; an empty watch list means the first three.
const (
	Assignments   = "assignments"
	Announcements = "announcements"
	Files         = "files"
)

// announcementWindow is how far back announcements are listed; Canvas's
// own default of 14 days would let older ones fall out and read as removed.
const announcementWindow = 365 * 24 * time.Hour

// Kind is the table entry for canvas.
var Kind = kind.Kind{
	Name:   Name,
	Words:  []string{"instructure"},
	Accept: "application/json",
	// Canvas answers with JSON arrays; an error object is read by the run.
	JSONObject: func(gjson.Result, watch.Spec) (bool, error) { return true, nil },
	Status:     status,
	Run:        run,
}

// status classifies Canvas's failures: a 401 carrying WWW-Authenticate or
// the invalid-token body means the token is bad (auth); any other 401 is
// a resource the person may not see (permission); a 403 "Rate Limit
// Exceeded" is throttling (transient, retried with backoff).
func status(code int, h http.Header, body []byte) watch.Class {
	low := bytes.ToLower(body)
	switch code {
	case http.StatusUnauthorized:
		if h.Get("WWW-Authenticate") != "" || bytes.Contains(low, []byte("invalid access token")) ||
			bytes.Contains(low, []byte("insufficient scopes")) {
			return watch.Auth
		}
		return watch.Permission
	case http.StatusForbidden:
		if bytes.Contains(low, []byte("rate limit exceeded")) {
			return watch.Transient
		}
	}
	return ""
}

// client carries one run's requests: the Bearer token on each (sent only
// to the site's origin by the getter), one request at a time.
type client struct {
	g    kind.Getter
	site *url.URL
	hdr  http.Header
	max  int
	n    int
}

func run(ctx context.Context, g kind.Getter, in kind.Input) ([]watch.Item, error) {
	if strings.TrimSpace(in.Spec.Token) == "" {
		return nil, watch.Errorf(watch.Auth, "canvas: no access token")
	}
	site := &url.URL{Scheme: in.URL.Scheme, Host: in.URL.Host}
	c := &client{g: g, site: site, hdr: http.Header{"Authorization": {"Bearer " + in.Spec.Token}}, max: in.MaxItems}
	courses, err := c.courses(ctx, in.Spec.Courses)
	if err != nil {
		return nil, err
	}
	want := in.Spec.Watch
	if len(want) == 0 {
		want = []string{Assignments, Announcements, Files}
	}
	host := strings.ToLower(site.Host)
	var items []watch.Item
	if slices.Contains(want, Assignments) {
		for _, co := range courses {
			rows, err := c.list(ctx, "/api/v1/courses/"+co.id+"/assignments", url.Values{"include[]": {"submission"}, "order_by": {"due_at"}})
			if skip(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				items = append(items, assignment(host, co, r))
			}
		}
		if err := c.planner(ctx, items, "canvas:"+host+":assignment:", in.Now); err != nil {
			return nil, err
		}
	}
	if slices.Contains(want, Announcements) && len(courses) > 0 {
		q := url.Values{
			"start_date": {in.Now.Add(-announcementWindow).UTC().Format(time.RFC3339)},
			"end_date":   {in.Now.Add(28 * 24 * time.Hour).UTC().Format(time.RFC3339)},
		}
		names := map[string]string{}
		for _, co := range courses {
			q.Add("context_codes[]", "course_"+co.id)
			names["course_"+co.id] = co.name
		}
		rows, err := c.list(ctx, "/api/v1/announcements", q)
		if err != nil && !skip(err) {
			return nil, err
		}
		for _, r := range rows {
			items = append(items, announcement(host, names[r.Get("context_code").String()], r))
		}
	}
	if slices.Contains(want, Files) {
		for _, co := range courses {
			rows, err := c.list(ctx, "/api/v1/courses/"+co.id+"/files", nil)
			if skip(err) { // the files tab is turned off for this course
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				items = append(items, file(site, co, r))
			}
		}
	}
	return items, nil
}

// plannerWindow is how far ahead the planner is read for the state of
// assignments still to be reminded of.
const plannerWindow = 180 * 24 * time.Hour

// planner marks done the assignments the person's planner counts as done:
// marked complete there (planner_override.marked_complete), or submitted
// or excused by its own account (submissions), which covers work the
// assignment listing shows no submission for (a quiz or a graded
// discussion is planned as its own type, naming its assignment). The
// planner adds to what the assignment listing says; it never marks an
// assignment undone. A site without the planner, or a token that may not
// read it, leaves the assignments as listed; only a failure worth
// retrying fails the run.
func (c *client) planner(ctx context.Context, items []watch.Item, prefix string, now time.Time) error {
	open := map[string]*watch.Item{}
	for i := range items {
		it := &items[i]
		if id, ok := strings.CutPrefix(it.ID, prefix); ok && !it.Done && !it.Due.IsZero() && now.Before(it.Due) {
			open[id] = it
		}
	}
	if len(open) == 0 {
		return nil
	}
	counted := c.n // planner rows are not items: they do not count toward the cap
	rows, err := c.list(ctx, "/api/v1/planner/items", url.Values{
		"start_date": {now.Add(-24 * time.Hour).UTC().Format(time.RFC3339)},
		"end_date":   {now.Add(plannerWindow).UTC().Format(time.RFC3339)},
	})
	c.n = counted
	if err != nil {
		if cl := watch.ClassOf(err); cl == watch.Transient || cl == watch.Cancelled || cl == watch.Auth {
			return err
		}
		return nil
	}
	for _, r := range rows {
		id := r.Get("plannable.assignment_id").String()
		if r.Get("plannable_type").String() == "assignment" {
			id = r.Get("plannable_id").String()
		}
		it := open[id]
		if it == nil {
			continue
		}
		sub := r.Get("submissions")
		if r.Get("planner_override.marked_complete").Bool() || sub.Get("excused").Bool() ||
			sub.Get("submitted").Bool() && !sub.Get("redo_request").Bool() {
			it.Done = true
		}
	}
	return nil
}

// skip reports a failure that leaves one course's listing out rather than
// failing the run: the person may not see it, or it does not exist.
func skip(err error) bool {
	c := watch.ClassOf(err)
	return err != nil && (c == watch.Permission || c == watch.NotFound)
}

type course struct{ id, name string }

// courses lists the active courses, or the listed ids among them; a
// course whose fields are restricted by date is left out.
func (c *client) courses(ctx context.Context, ids []string) ([]course, error) {
	rows, err := c.list(ctx, "/api/v1/courses", url.Values{"enrollment_state": {"active"}})
	if err != nil {
		return nil, err
	}
	var out []course
	for _, r := range rows {
		id := r.Get("id").String()
		if id == "" || r.Get("access_restricted_by_date").Bool() || !r.Get("name").Exists() {
			continue
		}
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		out = append(out, course{id: id, name: r.Get("name").String()})
	}
	return out, nil
}

// list GETs path with per_page=100 and follows Link rel="next" until it is
// absent; any page failing fails the listing.
func (c *client) list(ctx context.Context, path string, q url.Values) ([]gjson.Result, error) {
	u := c.site.JoinPath(path)
	v := url.Values{}
	for k, vs := range q {
		v[k] = vs
	}
	v.Set("per_page", "100")
	u.RawQuery = v.Encode()
	var out []gjson.Result
	for u != nil {
		doc, err := c.g.Do(ctx, kind.Request{URL: u, Header: c.hdr})
		if err != nil {
			return nil, err
		}
		body := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(doc.Body), []byte("while(1);")))
		if !gjson.ValidBytes(body) {
			return nil, watch.Errorf(watch.Schema, "canvas %s: the answer is not JSON", path)
		}
		res := gjson.ParseBytes(body)
		if !res.IsArray() {
			return nil, errorBody(path, res)
		}
		arr := res.Array()
		c.n += len(arr)
		if c.max > 0 && c.n > c.max {
			return nil, watch.Errorf(watch.TooLarge, "canvas: more than %d items", c.max)
		}
		out = append(out, arr...)
		if u, err = nextLink(doc); err != nil {
			return nil, err
		}
		if u != nil && !strings.EqualFold(u.Host, c.site.Host) {
			return nil, watch.Errorf(watch.Scope, "canvas %s: the next page is on another host", path)
		}
	}
	return out, nil
}

// errorBody classifies an object where a list was expected.
func errorBody(path string, res gjson.Result) error {
	msg := strings.ToLower(res.Get("errors.0.message").String() + " " + res.Get("message").String())
	switch {
	case strings.Contains(msg, "invalid access token"), strings.Contains(msg, "insufficient scopes"):
		return watch.Errorf(watch.Auth, "canvas %s: the access token is not accepted", path)
	case strings.Contains(msg, "user authorization required"), strings.Contains(msg, "unauthorized"):
		return watch.Errorf(watch.Permission, "canvas %s: not allowed", path)
	case strings.Contains(msg, "rate limit"):
		return watch.Errorf(watch.Transient, "canvas %s: rate limited", path)
	case strings.Contains(msg, "does not exist"):
		return watch.Errorf(watch.NotFound, "canvas %s: not found", path)
	}
	return watch.Errorf(watch.Schema, "canvas %s: want a list", path)
}

// nextLink returns the Link header's rel="next" target, taken as opaque.
func nextLink(doc *kind.Document) (*url.URL, error) {
	for _, part := range strings.Split(doc.Header.Get("Link"), ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "rel") && slices.Contains(strings.Fields(strings.Trim(v, `"`)), "next") {
				t := strings.TrimSpace(target)
				u, err := doc.URL.Parse(strings.TrimSuffix(strings.TrimPrefix(t, "<"), ">"))
				if err != nil {
					return nil, watch.Errorf(watch.Schema, "canvas: unusable next link")
				}
				return u, nil
			}
		}
	}
	return nil, nil
}

func when(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// assignment: due_at already carries the caller's overrides. Submitted,
// graded or excused work is done: it gets no more reminders.
func assignment(host string, co course, r gjson.Result) watch.Item {
	sub := r.Get("submission")
	state := sub.Get("workflow_state").String()
	excused := sub.Get("excused").Bool()
	done := excused || sub.Get("submitted_at").String() != "" ||
		state == "submitted" || state == "graded" || state == "pending_review"
	return watch.Item{
		ID:    "canvas:" + host + ":assignment:" + r.Get("id").String(),
		Title: co.name + ": " + r.Get("name").String(),
		URL:   r.Get("html_url").String(),
		Due:   when(r.Get("due_at").String()),
		Done:  done,
		Digest: kind.Digest(r.Get("name").String(), r.Get("due_at").String(), r.Get("lock_at").String(),
			r.Get("unlock_at").String(), r.Get("points_possible").String(), state, boolText(excused)),
		Summary: watch.Summary(kind.HTMLText(r.Get("description").String()), ""),
	}
}

func announcement(host, courseName string, r gjson.Result) watch.Item {
	title := r.Get("title").String()
	if courseName != "" {
		title = courseName + ": " + title
	}
	return watch.Item{
		ID:      "canvas:" + host + ":announcement:" + r.Get("id").String(),
		Title:   title,
		URL:     r.Get("html_url").String(),
		Digest:  kind.Digest(r.Get("title").String(), r.Get("message").String()),
		Summary: watch.Summary(kind.HTMLText(r.Get("message").String()), ""),
	}
}

// file: the digest leaves out url, whose verifier changes on every listing;
// the file's metadata URL is re-read for a fresh one before a download.
func file(site *url.URL, co course, r gjson.Result) watch.Item {
	id := r.Get("id").String()
	name := r.Get("display_name").String()
	modified := r.Get("modified_at").String()
	if modified == "" {
		modified = r.Get("updated_at").String()
	}
	return watch.Item{
		ID:     "canvas:" + strings.ToLower(site.Host) + ":file:" + id,
		Title:  co.name + ": " + name,
		Digest: kind.Digest(name, r.Get("size").String(), modified),
		File: &watch.File{ID: id, Name: name, Course: co.name, Size: r.Get("size").Int(), Modified: modified,
			ContentType: r.Get("content-type").String(), Meta: site.JoinPath("/api/v1/files", id).String()},
	}
}

func boolText(b bool) string {
	if b {
		return "1"
	}
	return ""
}
