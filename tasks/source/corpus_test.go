package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

// TestCorpus runs every document under $HERALD_CORPUS_DIR through Fetch
// (served over HTTP, kind from the file) and reports how each ended:
// parsed, refused with a classified error, crashed or hung, and the
// slowest time. With $HERALD_CORPUS_OUT it writes one JSON line per file
// (items included) for comparison with other readers. Skipped without
// the variable: the corpora are public test suites kept outside the
// repository.
func TestCorpus(t *testing.T) {
	dir := os.Getenv("HERALD_CORPUS_DIR")
	if dir == "" {
		t.Skip("HERALD_CORPUS_DIR not set")
	}
	var out *json.Encoder
	if p := os.Getenv("HERALD_CORPUS_OUT"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out = json.NewEncoder(f)
	}
	var files []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && corpusKind(p) != "" {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	type stats struct{ files, parsed, classified, unclassified, crashed, hung int }
	byKind := map[string]*stats{}
	var slowest time.Duration
	var slowFile string
	classes := map[string]int{}
	for _, p := range files {
		kind := corpusKind(p)
		body, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		st := byKind[kind]
		if st == nil {
			st = &stats{}
			byKind[kind] = st
		}
		st.files++
		type result struct {
			res   watch.Result
			err   error
			panic any
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- result{panic: r}
				}
			}()
			res, err := corpusFetch(t, kind, body)
			done <- result{res: res, err: err}
		}()
		var r result
		outcome := ""
		select {
		case r = <-done:
		case <-time.After(20 * time.Second):
			outcome = "hang"
			st.hung++
		}
		took := time.Since(start)
		if took > slowest {
			slowest, slowFile = took, p
		}
		var we *watch.Error
		switch {
		case outcome != "":
		case r.panic != nil:
			outcome = "crash"
			st.crashed++
			t.Errorf("%s: panic %v", p, r.panic)
		case r.err == nil:
			outcome = "parsed"
			st.parsed++
		case errors.As(r.err, &we):
			outcome = "error:" + string(we.Class)
			st.classified++
			classes[string(we.Class)+": "+firstWords(r.err.Error())]++
		default:
			outcome = "unclassified"
			st.unclassified++
			t.Errorf("%s: unclassified %v", p, r.err)
		}
		if out != nil {
			rel, _ := filepath.Rel(dir, p)
			line := map[string]any{"file": rel, "kind": kind, "outcome": outcome, "ms": took.Milliseconds(), "skipped": r.res.Skipped}
			if r.err != nil {
				line["error"] = r.err.Error()
			}
			var items []map[string]any
			for _, it := range r.res.Items {
				m := map[string]any{"id": it.ID, "title": it.Title, "url": it.URL}
				if !it.Due.IsZero() {
					m["due"] = it.Due.UTC().Format(time.RFC3339)
				}
				items = append(items, m)
			}
			line["items"] = items
			_ = out.Encode(line)
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		s := byKind[k]
		t.Logf("%-5s files %d: parsed %d, classified errors %d, unclassified %d, crashes %d, hangs %d", k, s.files, s.parsed, s.classified, s.unclassified, s.crashed, s.hung)
	}
	t.Logf("slowest %v (%s)", slowest, slowFile)
	var cs []string
	for c, n := range classes {
		cs = append(cs, fmt.Sprintf("%5d %s", n, c))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(cs)))
	for _, c := range cs {
		t.Log(c)
	}
}

func corpusKind(p string) string {
	l := strings.ToLower(p)
	switch {
	case strings.HasSuffix(l, ".ics") || strings.HasSuffix(l, ".ical") || strings.HasSuffix(l, ".ifb"):
		return KindICal
	case strings.HasSuffix(l, ".xml") || strings.HasSuffix(l, ".rss") || strings.HasSuffix(l, ".atom") ||
		strings.HasSuffix(l, ".rdf") || strings.HasSuffix(l, ".feed"):
		return KindRSS
	case strings.HasSuffix(l, ".json"):
		return "json-any"
	}
	return ""
}

// corpusFetch serves body and fetches it; JSON files are read as JSON
// Feed when they say so, else as JSON.
func corpusFetch(t *testing.T, kind string, body []byte) (watch.Result, error) {
	ctype := map[string]string{KindICal: "text/calendar", KindRSS: "application/xml", "json-any": "application/json"}[kind]
	if kind == "json-any" {
		kind = KindJSON
		if strings.Contains(string(body), "jsonfeed.org/version") {
			kind = KindRSS
		}
	}
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(body)
	}))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s, err := New(watch.Spec{Kind: kind, URL: srv.URL + "/doc"}, Options{AllowPrivate: true, Now: func() time.Time { return now }})
	if err != nil {
		return watch.Result{}, err
	}
	return s.Fetch(t.Context(), watch.Conditional{})
}

func firstWords(s string) string {
	for _, cut := range []string{" at line", ": line", " in ", "\"", "("} {
		if i := strings.Index(s, cut); i > 0 {
			s = s[:i]
		}
	}
	return truncate(s, 70)
}
