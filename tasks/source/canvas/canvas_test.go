package canvas_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/download/downloadtest"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

const token = "tok-secret-1234"

// fakeCanvas speaks Canvas's wire format: Bearer tokens, while(1);
// prefixes, per_page and Link rel="next" pagination, the 401 and
// rate-limit bodies.
type fakeCanvas struct {
	mu        sync.Mutex
	srv       *httptest.Server
	revoked   bool
	throttle  int // answer this many requests 403 Rate Limit Exceeded
	failPath  string
	files     int // files in course 1
	pageSize  int
	asgDue    string
	submitted bool
	requests  int
	perPage   []string
}

func newFake(t testing.TB) *fakeCanvas {
	f := &fakeCanvas{files: 250, asgDue: "2030-01-10T23:59:00Z"}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCanvas) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	f.perPage = append(f.perPage, r.URL.Query().Get("per_page"))
	if r.Header.Get("Authorization") != "Bearer "+token || f.revoked {
		downloadtest.InvalidToken(w)
		return
	}
	if f.throttle > 0 {
		f.throttle--
		downloadtest.RateLimited(w)
		return
	}
	if f.failPath != "" && r.URL.Path == f.failPath && r.URL.Query().Get("page") == "2" {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	var rows []string
	switch r.URL.Path {
	case "/api/v1/courses":
		if r.URL.Query().Get("enrollment_state") != "active" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rows = []string{`{"id":1,"name":"Algebra"}`, `{"id":2,"name":"Biology"}`, `{"id":3,"access_restricted_by_date":true}`}
	case "/api/v1/courses/1/assignments":
		sub := `{"workflow_state":"unsubmitted","submitted_at":null,"excused":false}`
		if f.submitted {
			sub = `{"workflow_state":"submitted","submitted_at":"2029-12-01T10:00:00Z","excused":false}`
		}
		rows = []string{fmt.Sprintf(`{"id":11,"name":"Homework 1","due_at":%q,"points_possible":10,"html_url":"%s/courses/1/assignments/11","submission":%s,`+
			`"description":"<p>Solve problems 1&ndash;5 from <b>chapter 2</b>.</p>"}`, f.asgDue, f.srv.URL, sub)}
	case "/api/v1/courses/2/assignments":
		rows = []string{`{"id":21,"name":"Lab report","due_at":null,"submission":{"workflow_state":"graded","excused":true}}`}
	case "/api/v1/announcements":
		rows = []string{`{"id":31,"title":"Welcome","message":"<p>Hi</p>","context_code":"course_1"}`}
	case "/api/v1/courses/1/files":
		for i := 0; i < f.files; i++ {
			rows = append(rows, fmt.Sprintf(`{"id":%d,"display_name":"notes-%d.pdf","size":%d,"modified_at":"2029-09-01T00:00:00Z","url":"%s/files/%d/download?verifier=v%d"}`, 1000+i, i, 100+i, f.srv.URL, i, time.Now().UnixNano()))
		}
	case "/api/v1/courses/2/files":
		w.WriteHeader(http.StatusUnauthorized) // files tab hidden: no WWW-Authenticate
		fmt.Fprint(w, `{"status":"unauthorized","errors":[{"message":"user authorization required"}]}`)
		return
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"errors":[{"message":"The specified resource does not exist."}]}`)
		return
	}
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 || per > 100 {
		per = 10
	}
	if f.pageSize > 0 {
		per = f.pageSize
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page < 1 {
		page = 1
	}
	lo, hi := (page-1)*per, page*per
	if hi < len(rows) {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next", <%s%s?page=1>; rel="first"`, f.srv.URL, r.URL.Path, q.Encode(), f.srv.URL, r.URL.Path))
	} else {
		hi = len(rows)
	}
	if lo > len(rows) {
		lo = len(rows)
	}
	fmt.Fprint(w, "while(1);["+strings.Join(rows[lo:hi], ",")+"]")
}

func open(t testing.TB, f *fakeCanvas, spec watch.Spec) *source.Source {
	t.Helper()
	spec.Kind, spec.URL = "canvas", f.srv.URL
	if spec.Token == "" {
		spec.Token = token
	}
	s, err := source.New(spec, source.Options{AllowPrivate: true, Now: func() time.Time { return time.Date(2029, 12, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func byID(items []watch.Item) map[string]watch.Item {
	m := map[string]watch.Item{}
	for _, it := range items {
		m[it.ID] = it
	}
	return m
}

func TestI7_CanvasRunFollowsEveryPage(t *testing.T) {
	f := newFake(t)
	res, err := open(t, f, watch.Spec{}).Fetch(context.Background(), watch.Conditional{})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(f.srv.URL, "http://")
	got := byID(res.Items)
	// 2 assignments + 1 announcement + 250 files (3 pages); course 3 is
	// restricted and course 2's files are hidden: skipped, not fatal.
	if len(res.Items) != 253 {
		t.Fatalf("%d items, want 253", len(res.Items))
	}
	a := got["canvas:"+host+":assignment:11"]
	if a.Title != "Algebra: Homework 1" || !a.Due.Equal(time.Date(2030, 1, 10, 23, 59, 0, 0, time.UTC)) || a.Done {
		t.Fatalf("assignment = %+v", a)
	}
	if !got["canvas:"+host+":assignment:21"].Done {
		t.Fatal("an excused assignment is not done")
	}
	if _, ok := got["canvas:"+host+":file:1249"]; !ok {
		t.Fatal("the last page of files is missing")
	}
	if _, ok := got["canvas:"+host+":announcement:31"]; !ok {
		t.Fatal("announcement missing")
	}
	for _, p := range f.perPage {
		if p != "100" {
			t.Fatalf("per_page = %q, want 100 on every request", p)
		}
	}
}

func TestCanvasDigestIgnoresSignedURLs(t *testing.T) {
	f := newFake(t)
	s := open(t, f, watch.Spec{Watch: []string{"files"}})
	a, err := s.Fetch(context.Background(), watch.Conditional{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Fetch(context.Background(), watch.Conditional{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Items {
		if a.Items[i].Digest != b.Items[i].Digest {
			t.Fatalf("digest of %s changed with the verifier", a.Items[i].ID)
		}
	}
}

func TestCanvasSubmissionAndMovedDue(t *testing.T) {
	f := newFake(t)
	s := open(t, f, watch.Spec{Watch: []string{"assignments"}, Courses: []string{"1"}})
	first, _ := s.Fetch(context.Background(), watch.Conditional{})
	f.mu.Lock()
	f.asgDue = "2030-01-12T23:59:00Z"
	f.mu.Unlock()
	moved, _ := s.Fetch(context.Background(), watch.Conditional{})
	f.mu.Lock()
	f.submitted = true
	f.mu.Unlock()
	done, err := s.Fetch(context.Background(), watch.Conditional{})
	if err != nil || len(first.Items) != 1 || len(done.Items) != 1 {
		t.Fatalf("items %d/%d, err %v (only course 1 was listed)", len(first.Items), len(done.Items), err)
	}
	if first.Items[0].Digest == moved.Items[0].Digest || !moved.Items[0].Due.After(first.Items[0].Due) {
		t.Fatal("a moved due date is not a change")
	}
	if !done.Items[0].Done {
		t.Fatal("a submitted assignment still wants reminders")
	}
}

func TestI6_CanvasRevokedTokenIsAuth(t *testing.T) {
	f := newFake(t)
	f.revoked = true
	_, err := open(t, f, watch.Spec{}).Fetch(context.Background(), watch.Conditional{})
	if watch.ClassOf(err) != watch.Auth {
		t.Fatalf("err = %v, want class auth", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Fatal("the error shows the token (I10)")
	}
	if f.requests != 1 {
		t.Fatalf("%d requests after a bad token, want 1", f.requests)
	}
}

func TestI6_CanvasRateLimitIsTransient(t *testing.T) {
	f := newFake(t)
	f.throttle = 1
	_, err := open(t, f, watch.Spec{}).Fetch(context.Background(), watch.Conditional{})
	if watch.ClassOf(err) != watch.Transient {
		t.Fatalf("err = %v, want class transient", err)
	}
}

func TestI7_CanvasPageFailureFailsTheWholeRun(t *testing.T) {
	f := newFake(t)
	f.failPath = "/api/v1/courses/1/files"
	res, err := open(t, f, watch.Spec{}).Fetch(context.Background(), watch.Conditional{})
	if err == nil || len(res.Items) != 0 {
		t.Fatalf("a failed page gave %d items, err %v", len(res.Items), err)
	}
}

func TestI8_CanvasTokenGoesOnlyToTheSite(t *testing.T) {
	var leaked bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = r.Header.Get("Authorization") != ""
		fmt.Fprint(w, "[]")
	}))
	defer other.Close()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `<`+other.URL+`/api/v1/courses?page=2>; rel="next"`)
		fmt.Fprint(w, `[{"id":1,"name":"A"}]`)
	}))
	defer site.Close()
	s, err := source.New(watch.Spec{Kind: "canvas", URL: site.URL, Token: token}, source.Options{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Fetch(context.Background(), watch.Conditional{})
	if watch.ClassOf(err) != watch.Scope || leaked {
		t.Fatalf("err = %v, token sent elsewhere: %v", err, leaked)
	}
}

// BenchmarkCanvasRun2000 is one run over a site of 2,000 files, 20 pages.
func BenchmarkCanvasRun2000(b *testing.B) {
	f := newFake(b)
	f.files = 2000
	s := open(b, f, watch.Spec{})
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.Fetch(context.Background(), watch.Conditional{})
		if err != nil || len(res.Items) != 2003 {
			b.Fatalf("%d items, %v", len(res.Items), err)
		}
	}
}

// An assignment's and an announcement's text reach notices as plain-text
// summaries (SPEC §20).
func TestCanvas_AssignmentAndAnnouncementSummaries(t *testing.T) {
	f := newFake(t)
	res, err := open(t, f, watch.Spec{Watch: []string{"assignments", "announcements"}}).Fetch(context.Background(), watch.Conditional{})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(f.srv.URL, "http://")
	items := byID(res.Items)
	for id, want := range map[string]string{
		"canvas:" + host + ":assignment:11":   "Solve problems 1–5 from chapter 2.",
		"canvas:" + host + ":announcement:31": "Hi",
	} {
		if got := items[id].Summary; got != want {
			t.Errorf("%s: summary %q, want %q", id, got, want)
		}
	}
}
