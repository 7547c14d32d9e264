// Package watch holds the vocabulary shared by sources, snapshots and the
// task manager: what a source is asked to fetch (Spec), what it yields
// (Item), and how failures are classified for the retry policy (I6).
package watch

import (
	"errors"
	"fmt"
	"time"
)

// Spec describes one watched source. Field paths (Items, ID, Title, Link,
// Due) apply to the json kind; Selector to html.
type Spec struct {
	Kind     string            `json:"kind"` // a kind of the table in tasks/source ("" = detect from content)
	URL      string            `json:"url"`
	Selector string            `json:"selector,omitempty"`
	Items    string            `json:"items,omitempty"`
	ID       string            `json:"id,omitempty"`
	Title    string            `json:"title,omitempty"`
	Link     string            `json:"link,omitempty"`
	Due      string            `json:"due,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"` // values may hold secrets: never log them
	// Token, Courses and Watch apply to the learning-platform kinds
	// (canvas, moodle): the access token (a secret: never log or show
	// it), the course ids (empty: every active course) and what to list.
	Token   string   `json:"token,omitempty"`
	Courses []string `json:"courses,omitempty"`
	Watch   []string `json:"watch,omitempty"`
	// TokenFrom, for a token given in chat, names the principal whose
	// stored credential for the site is the token; the source asks the
	// credential store for it at each run, so the token itself is never
	// in the spec or the task record (I10).
	TokenFrom string `json:"token_from,omitempty"`
	// Download, when set, keeps the listed course files in a directory
	// (docs/sources.md, Learning platforms: downloads).
	Download *Download `json:"download,omitempty"`
}

// Download says which course files a learning-platform task keeps, and
// where: Dir is relative to the task's own download directory, or an
// absolute path under a root the policy lists.
type Download struct {
	Dir       string   `json:"dir"`
	Types     []string `json:"types,omitempty"`       // file extensions ("pdf") or media types; empty: every file
	MaxPerRun int      `json:"max_per_run,omitempty"` // downloads claimed per run (0: the per-run bound)
}

// Item is one thing a source lists.
type Item struct {
	ID     string    `json:"id"`             // identity, stable across runs
	Title  string    `json:"title"`          // plain text
	URL    string    `json:"url,omitempty"`  // absolute
	Digest string    `json:"digest"`         // content digest: changes when the item changes
	Due    time.Time `json:"due,omitzero"`   // deadline, if any
	Done   bool      `json:"done,omitempty"` // completed: no more reminders
	Alt    []string  `json:"alt,omitempty"`  // fallback identities (link, normalised title) for guid churn
	// Series names the recurring series an item is one occurrence of (a
	// calendar event's UID), empty for single items. A series continuing
	// into view is not news (Compute).
	Series string `json:"series,omitempty"`
	// Summary is the item's own text in plain words (Summary), and Lines
	// the text of a page or JSON item line by line (Lines), from which
	// its changed lines are told; neither is part of the digest.
	Summary string   `json:"summary,omitempty"`
	Lines   []string `json:"lines,omitempty"`
	// File describes the course file this item is, for a task that keeps
	// files; it is never stored in a snapshot.
	File *File `json:"-"`
}

// File is a course file as its site lists it. Meta and URL are where it
// is fetched from; neither is part of the item's digest.
type File struct {
	ID          string // the site's file id
	Name        string // as the site names it; sanitised before it is written
	Course      string // the course's name
	Size        int64
	Modified    string // the site's modified time, as it gives it
	ContentType string
	// Meta is a URL re-read just before the download for a fresh signed
	// URL (canvas); empty when URL is used as it is.
	Meta string
	// URL is the file's own URL (moodle: the token is added when fetched).
	URL string
}

// Conditional carries the validators of the previous fetch.
type Conditional struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// Result is what one fetch yields.
type Result struct {
	Items       []Item
	NotModified bool        // 304: Items is empty, keep the snapshot
	Validators  Conditional // to send next time
	Kind        string      // the kind used (detected when Spec.Kind was empty)
	Title       string      // the source's own title (a feed's), "" when it gives none
	Skipped     int         // unreadable lines or entries left out of a leniently read document
	Selector    string      // the CSS selector picked for an html page watched without one
}

// Class is a failure class the manager's retry policy decides on.
type Class string

const (
	Transient      Class = "transient"       // retry (I6)
	Auth           Class = "auth"            // end at once
	Permission     Class = "permission"      // end at once
	Schema         Class = "schema"          // unparseable / wrong shape; end at once
	Cancelled      Class = "cancelled"       // end at once
	TooLarge       Class = "too_large"       // end at once
	BlockedAddress Class = "blocked_address" // SSRF guard refused; end at once
	NotFound       Class = "not_found"       // end at once
	Scope          Class = "scope"           // redirect or URL outside the approved scope
)

// Retryable reports whether a failure of class c may be retried (I6).
func (c Class) Retryable() bool { return c == Transient }

// Error is a classified failure.
type Error struct {
	Class Class
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Class, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a classified error.
func Errorf(c Class, format string, args ...any) error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// Classify wraps err with class c unless it is already classified.
func Classify(c Class, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Class: c, Err: err}
}

// ClassOf returns err's class; unclassified errors count as Transient.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Transient
}
