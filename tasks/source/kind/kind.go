// Package kind is the contract a source kind fulfils: the words that name
// it, how its documents are asked for and recognised, and how they are read
// into items. Package source holds the table of kinds and runs each one
// through its guarded fetcher; a kind never makes a request of its own.
package kind

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"time"

	"github.com/andybalholm/cascadia"
	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/watch"
)

// Kind describes one source kind. Exactly one of Parse and Run is set.
type Kind struct {
	// Name is the kind as written in the configuration and in chat ("rss").
	Name string
	// Words are further words a chat message may use for it ("as atom").
	Words []string
	// Accept is the Accept header its documents are asked for with.
	Accept string
	// NeedsSelector: a watch of this kind must give a CSS selector.
	NeedsSelector bool
	// Token: a watch of this kind reads with a person's access token for
	// the site (Spec.Token, or the stored credential Spec.TokenFrom
	// names); chat asks for one when none is stored.
	Token bool
	// Sniff recognises a body of this kind when the watch leaves the kind
	// empty. head is the start of the body without BOM or leading space,
	// lower the same in lower case. nil: never detected from content.
	Sniff func(head, lower []byte) bool
	// MediaTypes are the Content-Types that mean this kind when no kind's
	// Sniff recognised the body.
	MediaTypes []string
	// JSONObject judges a JSON object body before it is read as an API
	// error envelope: own means it is this kind's document; missing, when
	// not nil, is the failure to report if the body is no error envelope
	// either. nil: any JSON object is judged as a possible envelope.
	JSONObject func(doc gjson.Result, spec watch.Spec) (own bool, missing error)
	// Parse reads one fetched document into items.
	Parse func(doc *Document, in Input) ([]watch.Item, error)
	// Run fetches with as many requests as it needs (pages, API calls),
	// all through g, and returns the complete item set or an error; the
	// source keeps nothing of a run that fails.
	Run func(ctx context.Context, g Getter, in Input) ([]watch.Item, error)
	// Status classifies an answer outside 2xx from the start of its body
	// (a platform's rate-limit or bad-token wording); "" keeps the
	// default class of the status code. nil: the default always.
	Status func(code int, h http.Header, body []byte) watch.Class
}

// Input is what a kind reads a watch with.
type Input struct {
	Spec     watch.Spec
	URL      *url.URL          // the watch's URL, checked
	Zone     *time.Location    // floating times and DATE values
	MaxItems int               // a run listing more fails with class TooLarge
	Now      time.Time         // places the window of recurring entries
	Selector cascadia.Selector // compiled Spec.Selector, nil when empty
}

// Request is one request of a Run.
type Request struct {
	Method string // "" means GET
	URL    *url.URL
	// Form, when set, is sent as an application/x-www-form-urlencoded body.
	Form url.Values
	// Header is sent with the request, and only to the watch's own
	// origin: never across a redirect to another host or scheme.
	Header http.Header
}

// Getter sends a Run's requests through the guarded client: the address
// guard, the size cap, in-scope redirects, the watch's headers only to its
// own origin, and classified errors (*watch.Error) for any status outside
// 2xx and for API errors delivered with HTTP 200.
type Getter interface {
	Do(ctx context.Context, r Request) (*Document, error)
}

// Document is one fetched body.
type Document struct {
	URL         *url.URL // final URL, after redirects: the base for relative links
	Body        []byte
	ContentType string
	Header      http.Header
	// Skipped is set by a lenient Parse: the unreadable parts it left out.
	Skipped int
	// Selector is set by a Parse that picked its own CSS selector.
	Selector string
	// Title is set by a Parse that reads the document's own title (a
	// feed's), as plain text.
	Title string
}

// Digest hashes the fields of an item a person cares about, in order: an
// item's digest for the kinds that build it from several fields.
func Digest(fields ...string) string {
	h := sha256.New()
	for _, f := range fields {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
