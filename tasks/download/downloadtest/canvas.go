// Package downloadtest is a small course site for tests: a Canvas LMS
// and a Moodle on loopback speaking their real wire formats (Bearer or
// web-service tokens, while(1); prefixes, Link pagination, redirects from
// the site to a second host for file bodies, 401 and rate-limit bodies),
// with counters that tell what herald fetched.
package downloadtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token is the access token the fake sites accept.
const Token = "7~fake-course-token"

// Assignment is one assignment of a course.
type Assignment struct {
	ID        int
	Name      string
	Due       time.Time
	Submitted bool
}

// File is one course file. Redirect chooses where its download goes:
// "" the storage host, "outside" a host out of scope, "login" a sign-in
// page in place of the file.
type File struct {
	ID          int
	Name        string
	Modified    time.Time
	Body        []byte
	ContentType string
	Redirect    string
}

// Course is one course of the site.
type Course struct {
	ID          int
	Name        string
	Restricted  bool // access_restricted_by_date: listed without fields
	Assignments []Assignment
	Files       []File
}

// Announcement is one announcement of a course.
type Announcement struct {
	ID       int
	CourseID int
	Title    string
	Message  string
}

// Site is a fake Canvas: Site serves the API and /files/:id/download,
// Storage (on "localhost") the file bodies, Outside a host no scope
// lists (on 127.0.0.2, when the system has it).
type Site struct {
	Site, Storage, Outside *httptest.Server

	mu            sync.Mutex
	courses       []Course
	announcements []Announcement
	revoked       bool
	pageSize      int
	slow          time.Duration // pause between body chunks
	hits          map[int]int   // storage fetches by file id
	outsideHits   int
	leaks         int         // storage requests that carried Authorization
	throttle      int         // API requests still to answer 403 Rate Limit Exceeded
	unavailable   map[int]int // storage answers still to fail with 503, by file id
	serving       int         // storage requests being answered now
	mostServing   int         // the most answered at once
}

// NewCanvas starts a fake Canvas with courses and announcements. Files
// are listed pageSize to a page (at least 1).
func NewCanvas(courses []Course, announcements []Announcement, pageSize int) *Site {
	s := &Site{courses: courses, announcements: announcements, pageSize: max(pageSize, 1), hits: map[int]int{}, unavailable: map[int]int{}}
	s.Site = httptest.NewServer(http.HandlerFunc(s.api))
	s.Storage = httptest.NewServer(http.HandlerFunc(s.storage))
	if l, err := net.Listen("tcp", "127.0.0.2:0"); err == nil {
		s.Outside = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.outsideHits++
			s.mu.Unlock()
			fmt.Fprint(w, "not yours")
		}))
		s.Outside.Listener.Close()
		s.Outside.Listener = l
		s.Outside.Start()
	}
	return s
}

// Close stops the servers.
func (s *Site) Close() {
	s.Site.Close()
	s.Storage.Close()
	if s.Outside != nil {
		s.Outside.Close()
	}
}

// Change runs fn with the site's state locked: add or change courses,
// files, assignments, announcements.
func (s *Site) Change(fn func(courses *[]Course, announcements *[]Announcement)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.courses, &s.announcements)
}

// Revoke makes the token invalid (true) or valid again.
func (s *Site) Revoke(on bool) { s.mu.Lock(); s.revoked = on; s.mu.Unlock() }

// Slow paces file bodies: a pause between 1 KiB chunks (0: at once).
func (s *Site) Slow(d time.Duration) { s.mu.Lock(); s.slow = d; s.mu.Unlock() }

// Throttle answers the next n API requests with Canvas's rate-limit 403.
func (s *Site) Throttle(n int) { s.mu.Lock(); s.throttle = n; s.mu.Unlock() }

// Unavailable makes the storage host answer the next n fetches of file id
// with 503.
func (s *Site) Unavailable(id, n int) { s.mu.Lock(); s.unavailable[id] = n; s.mu.Unlock() }

// MostAtOnce is the most file bodies the storage host served at once.
func (s *Site) MostAtOnce() int { s.mu.Lock(); defer s.mu.Unlock(); return s.mostServing }

// Hits is how many times the storage host served file id.
func (s *Site) Hits(id int) int { s.mu.Lock(); defer s.mu.Unlock(); return s.hits[id] }

// TotalHits is how many file bodies the storage host served in all.
func (s *Site) TotalHits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hits {
		n += h
	}
	return n
}

// OutsideHits is how many requests reached the out-of-scope host.
func (s *Site) OutsideHits() int { s.mu.Lock(); defer s.mu.Unlock(); return s.outsideHits }

// Leaks is how many storage requests carried an Authorization header.
func (s *Site) Leaks() int { s.mu.Lock(); defer s.mu.Unlock(); return s.leaks }

// StorageHost is the storage server's host name as a policy lists it.
const StorageHost = "localhost"

func (s *Site) file(id int) (File, bool) {
	for _, c := range s.courses {
		for _, f := range c.Files {
			if f.ID == id {
				return f, true
			}
		}
	}
	return File{}, false
}

func (s *Site) api(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/login/saml" { // where an expired link lands: a sign-in page
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html>\n<html><head><title>Log In to Canvas</title></head><body><form action=\"/login\"></form></body></html>")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revoked || r.Header.Get("Authorization") != "Bearer "+Token {
		InvalidToken(w)
		return
	}
	if s.throttle > 0 {
		s.throttle--
		RateLimited(w)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/api/v1/courses":
		var rows []string
		for _, c := range s.courses {
			if c.Restricted {
				rows = append(rows, fmt.Sprintf(`{"id":%d,"access_restricted_by_date":true}`, c.ID))
				continue
			}
			rows = append(rows, fmt.Sprintf(`{"id":%d,"name":%q,"workflow_state":"available"}`, c.ID, c.Name))
		}
		s.list(w, r, rows)
	case r.URL.Path == "/api/v1/announcements":
		codes := r.URL.Query()["context_codes[]"]
		var rows []string
		for _, a := range s.announcements {
			for _, code := range codes {
				if code == "course_"+strconv.Itoa(a.CourseID) {
					rows = append(rows, fmt.Sprintf(`{"id":%d,"title":%q,"message":%q,"context_code":"course_%d"}`, a.ID, a.Title, a.Message, a.CourseID))
				}
			}
		}
		s.list(w, r, rows)
	case len(parts) == 5 && parts[2] == "courses":
		s.courseList(w, r, parts[3], parts[4])
	case len(parts) == 4 && parts[2] == "files":
		id, _ := strconv.Atoi(parts[3])
		f, ok := s.file(id)
		if !ok {
			notFound(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "while(1);"+s.fileJSON(f))
	case len(parts) == 3 && parts[0] == "files" && parts[2] == "download":
		id, _ := strconv.Atoi(parts[1])
		f, ok := s.file(id)
		if !ok || r.URL.Query().Get("verifier") != verifier(f) {
			notFound(w)
			return
		}
		target := strings.Replace(s.Storage.URL, "127.0.0.1", StorageHost, 1) + "/blob/" + strconv.Itoa(id) + "?sig=" + verifier(f)
		switch f.Redirect {
		case "outside":
			if s.Outside != nil {
				target = s.Outside.URL + "/blob/" + strconv.Itoa(id)
			}
		case "login":
			target = s.Site.URL + "/login/saml"
		}
		http.Redirect(w, r, target, http.StatusFound)
	default:
		notFound(w)
	}
}

// courseList answers a course's assignments or files.
func (s *Site) courseList(w http.ResponseWriter, r *http.Request, id, what string) {
	c, ok := s.course(id)
	if !ok || what != "assignments" && what != "files" {
		notFound(w)
		return
	}
	var rows []string
	if what == "files" {
		// Only the page asked for is written out: a large course stays
		// cheap to list.
		rows = make([]string, len(c.Files))
		from, to := s.page(r, len(rows))
		for i := from; i < to; i++ {
			rows[i] = s.fileJSON(c.Files[i])
		}
		s.list(w, r, rows)
		return
	}
	for _, a := range c.Assignments {
		state := "unsubmitted"
		if a.Submitted {
			state = "submitted"
		}
		rows = append(rows, fmt.Sprintf(`{"id":%d,"name":%q,"due_at":%q,"points_possible":10,"html_url":"%s/courses/%d/assignments/%d","submission":{"workflow_state":%q}}`,
			a.ID, a.Name, a.Due.UTC().Format(time.RFC3339), s.Site.URL, c.ID, a.ID, state))
	}
	s.list(w, r, rows)
}

// fileJSON is a file as Canvas lists it: the url carries a verifier that
// changes with every version.
func (s *Site) fileJSON(f File) string {
	ct := f.ContentType
	if ct == "" {
		ct = "application/pdf"
	}
	return fmt.Sprintf(`{"id":%d,"display_name":%q,"filename":"upload","size":%d,"content-type":%q,"modified_at":%q,"updated_at":%q,"url":"%s/files/%d/download?download_frd=1&verifier=%s","locked":false,"hidden":false}`,
		f.ID, f.Name, len(f.Body), ct, f.Modified.UTC().Format(time.RFC3339), f.Modified.UTC().Format(time.RFC3339), s.Site.URL, f.ID, verifier(f))
}

func verifier(f File) string { return fmt.Sprintf("v%d-%d", f.ID, f.Modified.Unix()) }

func (s *Site) course(id string) (Course, bool) {
	for _, c := range s.courses {
		if strconv.Itoa(c.ID) == id && !c.Restricted {
			return c, true
		}
	}
	return Course{}, false
}

// list answers one page of rows with the while(1); prefix and a Link
// header whose rel="next" is absent on the last page.
// page is the range of n rows that r's page holds.
func (s *Site) page(r *http.Request, n int) (from, to int) {
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	from = min((max(page, 1)-1)*s.pageSize, n)
	return from, min(from+s.pageSize, n)
}

func (s *Site) list(w http.ResponseWriter, r *http.Request, rows []string) {
	from, to := s.page(r, len(rows))
	page := from/s.pageSize + 1
	q := r.URL.Query()
	q.Set("page", "1")
	links := []string{fmt.Sprintf(`<%s%s?%s>; rel="first"`, s.Site.URL, r.URL.Path, q.Encode())}
	if to < len(rows) {
		q.Set("page", strconv.Itoa(page+1))
		links = append([]string{fmt.Sprintf(`<%s%s?%s>; rel="next"`, s.Site.URL, r.URL.Path, q.Encode())}, links...)
	}
	w.Header().Set("Link", strings.Join(links, ","))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprint(w, "while(1);["+strings.Join(rows[from:to], ",")+"]")
}

// InvalidToken answers as Canvas does for a bad or revoked token: 401
// with WWW-Authenticate and its error body.
func InvalidToken(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="canvas-lms"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprint(w, `{"errors":[{"message":"Invalid access token."}]}`)
}

// RateLimited answers as Canvas's throttle does.
func RateLimited(w http.ResponseWriter) {
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprint(w, "403 Forbidden (Rate Limit Exceeded)")
}

func notFound(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"errors":[{"message":"The specified resource does not exist."}]}`)
}

// storage serves file bodies on the second host; a sign-in page for a
// file redirected to "login" is served by the site itself.
func (s *Site) storage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if r.Header.Get("Authorization") != "" {
		s.leaks++
	}
	id, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/blob/"))
	f, ok := s.file(id)
	if ok {
		s.hits[id]++
	}
	s.serving++
	s.mostServing = max(s.mostServing, s.serving)
	defer func() { s.mu.Lock(); s.serving--; s.mu.Unlock() }()
	slow := s.slow
	down := s.unavailable[id] > 0
	if down {
		s.unavailable[id]--
	}
	s.mu.Unlock()
	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "<Error><Code>SlowDown</Code></Error>")
		return
	}
	if !ok || r.URL.Query().Get("sig") != verifier(f) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0"?><Error><Code>AccessDenied</Code></Error>`)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Body)))
	if slow <= 0 {
		w.Write(f.Body)
		return
	}
	fl, _ := w.(http.Flusher)
	for b := bytes.NewReader(f.Body); b.Len() > 0; {
		chunk := make([]byte, min(1024, b.Len()))
		b.Read(chunk)
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(slow):
		}
	}
}

// Body makes a file body of n bytes that names its file and version.
func Body(id, version, n int) []byte {
	head := fmt.Sprintf("%%PDF-1.4 file %d version %d\n", id, version)
	b := bytes.Repeat([]byte(head), n/len(head)+1)
	return b[:n]
}
