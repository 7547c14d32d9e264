package webhook

import (
	"encoding/json"
	"html/template"
	"net/http"
	"strings"
)

// indexLinks are the pages and APIs a person reaching the service's root
// looks for, in the order the page lists them.
var indexLinks = []struct{ Key, Path, Title string }{
	{"console", "/console", "Console (admins)"},
	{"inbox", "/inbox", "Inbox (with a token from /inbox token in chat)"},
	{"inbox_api", "/api/v1/inbox", "Inbox API"},
	{"health", "/healthz", "Health"},
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>herald</title></head>
<body><h1>herald</h1><ul>
{{range .}}<li><a href="{{.Path}}">{{.Title}}</a></li>
{{end}}</ul></body></html>
`))

// MountIndex answers GET / with a small page linking to the console and
// the inbox page, or with their paths as JSON for Accept:
// application/json. Any other path stays not found.
func MountIndex(s *Server) {
	s.Handle("GET /{$}", func(w http.ResponseWriter, r *http.Request) error {
		h := w.Header()
		SecureHeaders(h, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		if strings.Contains(r.Header.Get("Accept"), "application/json") {
			links := map[string]string{}
			for _, l := range indexLinks {
				links[l.Key] = l.Path
			}
			h.Set("Content-Type", "application/json")
			return json.NewEncoder(w).Encode(links)
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		return indexPage.Execute(w, indexLinks)
	})
}
