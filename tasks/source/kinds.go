package source

import (
	"bytes"
	"strings"
	"time"

	"github.com/andybalholm/cascadia"
	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/source/canvas"
	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/source/moodle"
	"github.com/herald-bridge/herald/tasks/watch"
)

// The built-in source kinds.
const (
	KindRSS  = "rss"
	KindICal = "ical"
	KindJSON = "json"
	KindHTML = "html"
)

// registry is the table of source kinds, in the order help text names
// them and detection tries them. Every other place (configuration checks,
// chat words, help, the assistant's prompt) reads it; a new kind is its
// package plus one line here.
var registry = []kind.Kind{
	{
		Name:   KindRSS,
		Words:  []string{"atom", "feed", "jsonfeed"},
		Accept: "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5",
		Sniff: func(head, lower []byte) bool {
			switch {
			case bytes.HasPrefix(head, []byte("{")):
				return bytes.Contains(lower, []byte("jsonfeed.org/version"))
			case bytes.HasPrefix(head, []byte("<")):
				for _, tag := range []string{"<rss", "<feed", "<rdf:rdf"} {
					if bytes.Contains(lower, []byte(tag)) {
						return true
					}
				}
			}
			return false
		},
		MediaTypes: []string{"application/rss+xml", "application/atom+xml", "application/feed+json", "application/rdf+xml"},
		JSONObject: func(doc gjson.Result, _ watch.Spec) (bool, error) {
			return strings.Contains(doc.Get("version").String(), "jsonfeed.org"), nil
		},
		Parse: func(d *kind.Document, _ kind.Input) ([]watch.Item, error) {
			items, err := parseFeed(d.Body, d.ContentType, d.URL)
			if err == nil {
				d.Title = feedTitle(d.Body, d.ContentType)
			}
			return items, err
		},
	},
	{
		Name:   KindICal,
		Words:  []string{"ics", "calendar", "ical/ics"},
		Accept: "text/calendar, */*;q=0.5",
		Sniff: func(_, lower []byte) bool {
			return bytes.HasPrefix(lower, []byte("begin:vcalendar"))
		},
		MediaTypes: []string{"text/calendar"},
		Parse: func(d *kind.Document, in kind.Input) ([]watch.Item, error) {
			items, skipped, err := parseICal(d.Body, d.ContentType, d.URL, in.Zone, in.MaxItems, in.Now)
			d.Skipped = skipped
			return items, err
		},
	},
	{
		Name:   KindJSON,
		Accept: "application/json, */*;q=0.5",
		Sniff: func(head, _ []byte) bool {
			return bytes.HasPrefix(head, []byte("{")) || bytes.HasPrefix(head, []byte("["))
		},
		MediaTypes: []string{"application/json"},
		JSONObject: func(doc gjson.Result, spec watch.Spec) (bool, error) {
			if spec.Items == "" {
				return false, nil
			}
			if v := doc.Get(spec.Items); v.IsArray() || v.IsObject() {
				return true, nil
			}
			return false, watch.Errorf(watch.Schema, "items path %q not found in the response", spec.Items)
		},
		Parse: func(d *kind.Document, in kind.Input) ([]watch.Item, error) {
			return parseJSON(d.Body, d.ContentType, d.URL, in.Spec, in.Zone)
		},
	},
	{
		Name:   KindHTML,
		Words:  []string{"web", "page"},
		Accept: "text/html, application/xhtml+xml, */*;q=0.5",
		// Without a selector, one is picked from the page (guessSelector).
		Sniff: func(head, lower []byte) bool {
			return bytes.HasPrefix(head, []byte("<")) &&
				(bytes.Contains(lower, []byte("<html")) || bytes.HasPrefix(lower, []byte("<!doctype html")))
		},
		MediaTypes: []string{"text/html", "application/xhtml+xml"},
		Parse: func(d *kind.Document, in kind.Input) ([]watch.Item, error) {
			sel := in.Selector
			if sel == nil {
				guessed, ok := guessSelector(d.Body, d.ContentType)
				if !ok {
					return nil, watch.Errorf(watch.Schema, "%s serves an HTML page without a repeated list of entries; give a CSS selector", redact(d.URL))
				}
				sel, d.Selector = cascadia.MustCompile(guessed), guessed
			}
			return parseHTML(d.Body, d.ContentType, d.URL, sel)
		},
	},
	withToken(canvas.Kind),
	withToken(moodle.Kind),
}

// withToken marks k as read with a person's access token per site.
func withToken(k kind.Kind) kind.Kind {
	k.Token = true
	return k
}

// Lookup returns the kind called name.
func Lookup(name string) (kind.Kind, bool) {
	for _, k := range registry {
		if k.Name == name {
			return k, true
		}
	}
	return kind.Kind{}, false
}

// Valid reports whether name is a kind, or "" (detect it).
func Valid(name string) bool {
	_, ok := Lookup(name)
	return ok || name == ""
}

// NeedsSelector reports whether a watch of kind name must give a selector.
func NeedsSelector(name string) bool {
	k, ok := Lookup(name)
	return ok && k.NeedsSelector
}

// TakesToken reports whether a watch of kind name reads with a person's
// access token for the site (canvas, moodle).
func TakesToken(name string) bool {
	k, ok := Lookup(name)
	return ok && k.Token
}

// Names lists the kinds in table order.
func Names() []string {
	names := make([]string, len(registry))
	for i, k := range registry {
		names[i] = k.Name
	}
	return names
}

// ByWord returns the kind a chat word names: its name or one of its words,
// in any case.
func ByWord(word string) (string, bool) {
	w := strings.ToLower(word)
	for _, k := range registry {
		if w == k.Name {
			return k.Name, true
		}
		for _, alt := range k.Words {
			if w == alt {
				return k.Name, true
			}
		}
	}
	return "", false
}

// List writes the kinds for people: each name between before and after,
// sep between them and last before the final one, as in
// List("", "", ", ", " or ") = "rss, ical, json or html".
func List(before, after, sep, last string) string {
	var b strings.Builder
	for i, k := range registry {
		switch {
		case i == 0:
		case i == len(registry)-1:
			b.WriteString(last)
		default:
			b.WriteString(sep)
		}
		b.WriteString(before + k.Name + after)
	}
	return b.String()
}

// input is what the kinds read s with.
func (s *Source) input() kind.Input {
	now := time.Now
	if s.o.Now != nil {
		now = s.o.Now
	}
	return kind.Input{Spec: s.spec, URL: s.u, Zone: s.o.DefaultZone, MaxItems: s.o.MaxItems, Now: now(), Selector: s.selector}
}
