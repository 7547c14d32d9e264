package delivery

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"
	"unicode/utf8"
)

// Formats a recipient may ask its notices in (SPEC §20).
const (
	FormatFull  = "full"  // title, summary, changed lines, link (the default)
	FormatTitle = "title" // title and link only
	FormatLink  = "link"  // the link alone
)

// Formats lists the formats in the order help text names them.
var Formats = []string{FormatFull, FormatTitle, FormatLink}

// ValidFormat reports whether f is a format, or "" (full).
func ValidFormat(f string) bool {
	return f == "" || f == FormatFull || f == FormatTitle || f == FormatLink
}

// MaxTemplateOutput bounds, in bytes, the text one template lays out; a
// longer text is cut between characters and ends in "…".
const MaxTemplateOutput = 8 << 10

// MaxTemplateSource bounds, in bytes, a template's own text.
const MaxTemplateSource = 16 << 10

// templateFuncs are the only functions a template may call besides
// text/template's built-in ones; none reads a file, the network or the
// environment, and none has a side effect.
var templateFuncs = template.FuncMap{
	// trunc cuts s to at most n characters, ending a cut one in "…".
	"trunc": func(n int, s string) string {
		if n <= 0 {
			return ""
		}
		if utf8.RuneCountInString(s) <= n {
			return s
		}
		r := []rune(s)
		return string(r[:n-1]) + "…"
	},
	// date writes t in layout (Go's reference time), "" for no time.
	"date": func(layout string, t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(layout)
	},
	// join joins a list of lines with sep.
	"join":  func(sep string, list []string) string { return strings.Join(list, sep) },
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	// default is def when v is empty (a zero value), else v.
	"default": func(def string, v any) any {
		switch x := v.(type) {
		case nil:
			return def
		case string:
			if x == "" {
				return def
			}
		case time.Time:
			if x.IsZero() {
				return def
			}
		case []string:
			if len(x) == 0 {
				return def
			}
		}
		return v
	},
	// call would call a function value in the data; the data holds none,
	// and a template may not call one of its own.
	"call": func(...any) (any, error) { return nil, errors.New("call is not available") },
}

// ParseTemplate parses a notice template: a Go text/template over
// {task, items: [{title, url, summary, change, due, diff}], occurred_at}
// with the functions trunc, date, join, upper, lower and default.
func ParseTemplate(src string) (*template.Template, error) {
	if len(src) > MaxTemplateSource {
		return nil, fmt.Errorf("template is %d bytes, more than %d", len(src), MaxTemplateSource)
	}
	t, err := template.New("notice").Option("missingkey=zero").Funcs(templateFuncs).Parse(src)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := boundedRanges(tt.Tree.Root, 0); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", tt.ParseName, err.line, err)
		}
	}
	return t, nil
}

// MaxRangeDepth is how deep a template's ranges may nest: items, then
// each item's lines.
const MaxRangeDepth = 2

// rangeError is a range a template may not have, at its line.
type rangeError struct {
	line int
	msg  string
}

func (e *rangeError) Error() string { return e.msg }

// boundedRanges refuses what would make a template run long without
// writing (its output is bounded already): a range over a number, and
// ranges nested deeper than MaxRangeDepth.
func boundedRanges(n parse.Node, depth int) *rangeError {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := boundedRanges(c, depth); err != nil {
				return err
			}
		}
	case *parse.RangeNode:
		line := n.Line
		if depth == MaxRangeDepth {
			return &rangeError{line, fmt.Sprintf("ranges nest at most %d deep", MaxRangeDepth)}
		}
		for _, cmd := range n.Pipe.Cmds {
			for _, arg := range cmd.Args {
				if _, num := arg.(*parse.NumberNode); num {
					return &rangeError{line, "a range goes over items or lines, not a number"}
				}
			}
		}
		if err := boundedRanges(n.List, depth+1); err != nil {
			return err
		}
		return boundedRanges(n.ElseList, depth)
	case *parse.IfNode:
		if err := boundedRanges(n.List, depth); err != nil {
			return err
		}
		return boundedRanges(n.ElseList, depth)
	case *parse.WithNode:
		if err := boundedRanges(n.List, depth); err != nil {
			return err
		}
		return boundedRanges(n.ElseList, depth)
	}
	return nil
}

// templates caches parsed templates by their text: a handful, from the
// config file.
var templates sync.Map // string → *template.Template or error

func parsed(src string) (*template.Template, error) {
	if v, ok := templates.Load(src); ok {
		if t, ok := v.(*template.Template); ok {
			return t, nil
		}
		return nil, v.(error)
	}
	t, err := ParseTemplate(src)
	if err != nil {
		templates.Store(src, err)
		return nil, err
	}
	templates.Store(src, t)
	return t, nil
}

// templateFailed remembers the templates whose failure was logged, so
// each is logged once, not at every push.
var templateFailed sync.Map // template text → struct{}

// present is the batch's message laid out for its recipient. A template
// that fails sends the default layout and is logged once: a push is
// never dropped for its layout.
func (d *Dispatcher) present(b *batch) Message {
	m, err := Present(*b.msg, b.route)
	if err != nil {
		src := b.route.Template
		if src == "" {
			src = b.msg.Template
		}
		if _, seen := templateFailed.LoadOrStore(src, struct{}{}); !seen {
			log := b.log(d)
			log.Warn().Str("recipient", b.route.To.Redacted()).Str("error", err.Error()).
				Msg("notice template failed; sent the default layout")
		}
	}
	return m
}

// Present lays m out for the recipient r: r's format, then r's template,
// else the task's own (m.Template), into m.Body. Only change notices and
// deadline reminders are laid out by a template. A template that fails
// leaves the default layout and returns its error; the message is
// always sendable.
func Present(m Message, r Route) (Message, error) {
	m.Items = Formatted(m.Items, r.Format)
	src := r.Template
	if src == "" {
		src = m.Template
	}
	m.Template = ""
	if src == "" || (m.Kind != KindChanged && m.Kind != KindDeadline) {
		return m, nil
	}
	body, err := Lay(src, m, r.Zone)
	if err != nil {
		return m, err
	}
	m.Body = body
	return m, nil
}

// Formatted is items as format shows them: full leaves them whole, title
// drops their summaries and changed lines, link leaves each its link
// alone (its title where it has none).
func Formatted(items []Item, format string) []Item {
	if format == "" || format == FormatFull || len(items) == 0 {
		return items
	}
	out := make([]Item, len(items))
	for i, it := range items {
		it.Summary, it.Diff = "", nil
		if format == FormatLink && it.URL != "" {
			it.Title, it.WasTitle = it.URL, ""
		}
		out[i] = it
	}
	return out
}

// Lay executes the template src over m in zone, bounded to
// MaxTemplateOutput bytes.
func Lay(src string, m Message, zone *time.Location) (string, error) {
	t, err := parsed(src)
	if err != nil {
		return "", err
	}
	if zone == nil {
		zone = time.UTC
	}
	w := &boundedWriter{max: MaxTemplateOutput}
	if err := t.Execute(w, templateData(m, zone)); err != nil && !errors.Is(err, errTemplateFull) {
		return "", err
	}
	out := strings.TrimSpace(w.b.String())
	if w.full {
		out += "…"
	}
	if out == "" {
		return "", errors.New("the template wrote nothing")
	}
	return out, nil
}

// templateData is what a template sees of m: lower-case keys, times in
// the recipient's zone, and a diff on every item (empty lists when none).
func templateData(m Message, zone *time.Location) map[string]any {
	items := m.Items
	if len(items) > MaxItems {
		items = items[:MaxItems]
	}
	list := make([]map[string]any, len(items))
	for i, it := range items {
		diff := map[string][]string{"added": {}, "removed": {}}
		if it.Diff != nil {
			diff["added"], diff["removed"] = nonNil(it.Diff.Added), nonNil(it.Diff.Removed)
		}
		due := it.Due
		if !due.IsZero() {
			due = due.In(zone)
		}
		list[i] = map[string]any{"title": it.Title, "url": it.URL, "summary": it.Summary, "change": it.Change, "due": due, "diff": diff}
	}
	task := m.TaskName
	if task == "" {
		task = m.Title
	}
	return map[string]any{"task": task, "items": list, "occurred_at": m.OccurredAt.In(zone)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

var errTemplateFull = errors.New("template output is full")

// boundedWriter keeps at most max bytes, cut between characters, and
// stops the template once it is full.
type boundedWriter struct {
	b    strings.Builder
	max  int
	full bool
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	room := w.max - w.b.Len()
	if len(p) <= room {
		w.b.Write(p)
		return len(p), nil
	}
	for room > 0 && !utf8.RuneStart(p[room]) {
		room--
	}
	w.b.Write(p[:room])
	w.full = true
	return room, errTemplateFull
}
