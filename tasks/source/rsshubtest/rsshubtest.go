// Package rsshubtest is a fake RSSHub instance on 127.0.0.1 for tests: it
// renders routes as RSS 2.0 the way RSSHub does (CDATA titles, a
// non-permalink guid, the RSSHub generator and ttl, Content-Type
// application/xml), answers an unknown route with 404 and a failed one
// with 503, demands ?key= when given an access key (403 otherwise), and
// serves Radar rules at /api/radar/rules.
package rsshubtest

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Item is one entry of a route. A Link starting with "/" is written on
// this instance's own address, as some routes link to the instance.
type Item struct {
	Title, Link, Description, PubDate string
}

// Instance is a running fake RSSHub instance.
type Instance struct {
	*httptest.Server
	key string

	mu     sync.Mutex
	routes map[string][]Item
	status map[string]int // route → status to answer instead
	down   int            // status every route answers (0: none)
	hits   map[string]int
	keys   []string // the key of every request, as sent
	radar  string
}

// New starts an instance; key, when not "", is its ACCESS_KEY.
func New(t testing.TB, key string) *Instance {
	t.Helper()
	in := &Instance{key: key, routes: map[string][]Item{}, status: map[string]int{}, hits: map[string]int{}}
	in.Server = httptest.NewServer(http.HandlerFunc(in.serve))
	t.Cleanup(in.Close)
	return in
}

// Route sets what route lists, newest first.
func (in *Instance) Route(route string, items ...Item) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.routes[route] = items
}

// Fail makes route answer status (0: answer again).
func (in *Instance) Fail(route string, status int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.status[route] = status
}

// Down makes every route answer status (0: answer again).
func (in *Instance) Down(status int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.down = status
}

// Radar sets the body of /api/radar/rules.
func (in *Instance) Radar(rules any) {
	b, _ := json.Marshal(rules)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.radar = string(b)
}

// Hits is how many requests asked for route (or any other path).
func (in *Instance) Hits(route string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hits[route]
}

// Keys are the access keys requests carried, in order.
func (in *Instance) Keys() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.keys...)
}

func (in *Instance) serve(w http.ResponseWriter, r *http.Request) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.hits[r.URL.Path]++
	if r.URL.Path == "/api/radar/rules" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(w, in.radar)
		return
	}
	route := r.URL.Path
	in.keys = append(in.keys, r.URL.Query().Get("key"))
	if in.key != "" && r.URL.Query().Get("key") != in.key {
		errorPage(w, http.StatusForbidden, "Authentication failed. Access denied.")
		return
	}
	if in.down != 0 {
		errorPage(w, in.down, "Error: upstream request failed")
		return
	}
	if st := in.status[route]; st != 0 {
		errorPage(w, st, "Error: upstream request failed")
		return
	}
	items, ok := in.routes[route]
	if !ok {
		errorPage(w, http.StatusNotFound, "Error: The route does not exist or has been deleted.")
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("X-RSSHub-Route", route)
	fmt.Fprint(w, in.render(route, items))
}

func errorPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>Welcome to RSSHub!</title></head><body><div class=\"error\">%s</div></body></html>", html.EscapeString(msg))
}

// render writes items as RSSHub's RSS 2.0 template does.
func (in *Instance) render(route string, items []Item) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<rss xmlns:atom="http://www.w3.org/2005/Atom" version="2.0">
<channel>
<title><![CDATA[` + route + `]]></title>
<link>https://www.example.edu` + route + `</link>
<atom:link href="` + in.URL + route + `" rel="self" type="application/rss+xml" />
<description><![CDATA[` + route + ` - Powered by RSSHub]]></description>
<generator>RSSHub</generator>
<webMaster>contact@rsshub.app (RSSHub)</webMaster>
<language>zh-cn</language>
<lastBuildDate>Sun, 06 Dec 2026 09:00:00 GMT</lastBuildDate>
<ttl>5</ttl>
`)
	for _, it := range items {
		link := it.Link
		if strings.HasPrefix(link, "/") {
			link = in.URL + link
		}
		b.WriteString("<item>\n<title><![CDATA[" + it.Title + "]]></title>\n")
		b.WriteString("<description><![CDATA[" + it.Description + "]]></description>\n")
		if it.PubDate != "" {
			b.WriteString("<pubDate>" + it.PubDate + "</pubDate>\n")
		}
		b.WriteString("<guid isPermaLink=\"false\">" + html.EscapeString(link) + "</guid>\n")
		b.WriteString("<link>" + html.EscapeString(link) + "</link>\n</item>\n")
	}
	b.WriteString("</channel>\n</rss>\n")
	return b.String()
}
