package downloadtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MoodleFile is one file of a Moodle course, in a resource module.
type MoodleFile struct {
	Module   int
	Name     string
	Modified time.Time
	Body     []byte
}

// Moodle is a fake Moodle: the web-service endpoint (token in the form
// body, exceptions inside HTTP 200) and pluginfile.php (token in the
// query) for file bodies. Its file URLs carry the token, as a site that
// rewrites them for the app does.
type Moodle struct {
	*httptest.Server

	mu      sync.Mutex
	course  string
	files   []MoodleFile
	due     time.Time
	revoked bool
	hits    map[string]int
}

// NewMoodle starts a fake Moodle with one course, one assignment due at
// due and files.
func NewMoodle(course string, due time.Time, files []MoodleFile) *Moodle {
	m := &Moodle{course: course, due: due, files: files, hits: map[string]int{}}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

// Change runs fn with the files locked.
func (m *Moodle) Change(fn func(files *[]MoodleFile)) { m.mu.Lock(); defer m.mu.Unlock(); fn(&m.files) }

// Revoke makes the token invalid.
func (m *Moodle) Revoke(on bool) { m.mu.Lock(); m.revoked = on; m.mu.Unlock() }

// Hits is how many times a file body was served, by file name.
func (m *Moodle) Hits(name string) int { m.mu.Lock(); defer m.mu.Unlock(); return m.hits[name] }

func (m *Moodle) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/webservice/pluginfile.php/") {
		m.file(w, r)
		return
	}
	if r.URL.Path != "/webservice/rest/server.php" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	if m.revoked || r.PostForm.Get("wstoken") != Token {
		fmt.Fprint(w, `{"exception":"moodle_exception","errorcode":"invalidtoken","message":"Invalid token - token not found"}`)
		return
	}
	var out any
	switch r.PostForm.Get("wsfunction") {
	case "core_course_get_enrolled_courses_by_timeline_classification":
		out = map[string]any{"courses": []any{map[string]any{"id": 2, "fullname": m.course, "shortname": "C"}}, "nextoffset": 1}
	case "mod_assign_get_assignments":
		out = map[string]any{"courses": []any{map[string]any{"id": 2, "assignments": []any{map[string]any{
			"id": 5, "cmid": 50, "name": "Lab report", "duedate": m.due.Unix(), "cutoffdate": 0, "allowsubmissionsfromdate": 0, "grade": 100}}}}, "warnings": []any{}}
	case "core_calendar_get_action_events_by_timesort":
		out = map[string]any{"events": []any{}}
	case "core_course_get_contents":
		var mods []any
		for _, f := range m.files {
			mods = append(mods, map[string]any{"id": f.Module, "name": f.Name, "modname": "resource",
				"url": m.URL + "/mod/resource/view.php?id=" + strconv.Itoa(f.Module),
				"contents": []any{map[string]any{"type": "file", "filename": f.Name, "filepath": "/", "filesize": len(f.Body),
					"fileurl":      fmt.Sprintf("%s/webservice/pluginfile.php/77/mod_resource/content/%d/%s?forcedownload=1&token=%s", m.URL, f.Module, f.Name, Token),
					"timemodified": f.Modified.Unix(), "mimetype": "application/pdf"}}})
		}
		out = []any{map[string]any{"id": 1, "name": "General", "modules": mods}}
	default:
		out = map[string]any{"exception": "dml_missing_record_exception", "errorcode": "invalidrecord"}
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (m *Moodle) file(w http.ResponseWriter, r *http.Request) {
	if m.revoked || r.URL.Query().Get("token") != Token {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":"Invalid token","errorcode":"invalidtoken"}`)
		return
	}
	name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	for _, f := range m.files {
		if f.Name == name {
			m.hits[name]++
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(f.Body)
			return
		}
	}
	http.NotFound(w, r)
}
