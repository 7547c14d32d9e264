// Package bundle is herald's task bundle: a ZIP archive holding
// herald-bundle.yaml, the tasks of one person or of everyone with their
// sources, schedules, filters, reminders and recipient names — never a
// token, a secret header, a credential in a URL or a recipient address
// (I10; README, Export, import and backup). Reading one treats it as
// untrusted input (package safezip).
package bundle

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/bundle/safezip"
	"github.com/herald-bridge/herald/tasks/source"
)

// FileName is the bundle's one meaningful entry.
const FileName = "herald-bundle.yaml"

// Format is the bundle format this binary writes and the newest it reads.
const Format = 1

// MaxTasks is the most tasks a bundle may hold.
const MaxTasks = 1000

// Bundle is herald-bundle.yaml.
type Bundle struct {
	Format  int       `yaml:"format"`
	Created time.Time `yaml:"created"`
	Herald  string    `yaml:"herald"` // the version of herald that wrote it
	Tasks   []Task    `yaml:"tasks"`
}

// Task is one task as a bundle carries it: the keys of a task in the
// config file, without id and owner (the importer owns what it imports).
type Task struct {
	Name         string   `yaml:"name,omitempty"`
	Source       Source   `yaml:"source"`
	Schedule     string   `yaml:"schedule,omitempty"`
	RemindBefore []string `yaml:"remind_before,omitempty"` // Go duration text: 72h
	// Notify names configured recipients; empty: the importer's chat or inbox.
	Notify  []string `yaml:"notify,omitempty"`
	Include []string `yaml:"include,omitempty"`
	Exclude []string `yaml:"exclude,omitempty"`
	// Needs lists what the export left out and the importer must give
	// again: "token", "header Authorization", "url parameter key",
	// "recipient address". A task that needs something is not imported.
	Needs []string `yaml:"needs,omitempty"`
}

// Source is a task's source without its secrets.
type Source struct {
	Kind     string   `yaml:"kind,omitempty"`
	URL      string   `yaml:"url"`
	Selector string   `yaml:"selector,omitempty"`
	Items    string   `yaml:"items,omitempty"`
	ID       string   `yaml:"id,omitempty"`
	Title    string   `yaml:"title,omitempty"`
	Link     string   `yaml:"link,omitempty"`
	Due      string   `yaml:"due,omitempty"`
	Courses  []string `yaml:"courses,omitempty"`
	Watch    []string `yaml:"watch,omitempty"`
}

// Errors a reader of a bundle decides on.
var (
	// ErrNewerFormat: the bundle was written by a newer herald.
	ErrNewerFormat = errors.New("bundle written by a newer herald")
	// ErrInvalid: the bundle's YAML is not a bundle.
	ErrInvalid = errors.New("not a herald bundle")
)

// credential names a query parameter or header that carries a secret.
var credential = regexp.MustCompile(`(?i)(auth|token|secret|passw|pwd|key|sig|session|cookie|credential|private|ticket)`)

// FromTask is t as a bundle carries it: secrets, addresses and the
// owner's own chat left out, what the importer must give again in Needs.
func FromTask(t *tasks.Task) Task {
	s := t.Source
	out := Task{
		Name: t.Name, Schedule: t.Schedule, Include: slices.Clone(t.Include), Exclude: slices.Clone(t.Exclude),
		Source: Source{Kind: s.Kind, Selector: s.Selector, Items: s.Items, ID: s.ID, Title: s.Title, Link: s.Link,
			Due: s.Due, Courses: slices.Clone(s.Courses), Watch: slices.Clone(s.Watch)},
	}
	for _, d := range t.RemindBefore {
		out.RemindBefore = append(out.RemindBefore, shortDuration(d))
	}
	out.Source.URL, out.Needs = cleanURL(s.URL)
	if s.Kind == source.KindRSSHub && s.Route != "" {
		// A route travels as itself: the importer's instances serve it.
		out.Source.URL, out.Needs = source.RouteScheme+s.Route, nil
	}
	if s.Token != "" || s.TokenFrom != "" {
		out.Needs = append(out.Needs, "token")
	}
	if s.Auth != nil {
		// A cookie, a password, a kept session: all secrets (I10).
		out.Needs = append(out.Needs, "sign-in")
	}
	if s.Render != "" {
		// Declared in the configuration only: an import never turns a
		// rendered page into one read as served.
		out.Needs = append(out.Needs, "render "+s.Render)
	}
	for _, h := range slices.Sorted(maps.Keys(s.Headers)) {
		out.Needs = append(out.Needs, "header "+h)
	}
	own := []string{t.ReplyTo, address.InboxOf(t.Owner), address.ChatOf(t.Owner)}
	addressLeft := false
	for _, r := range t.Notify {
		switch {
		case !address.IsLiteral(r):
			out.Notify = append(out.Notify, r)
		case !slices.Contains(own, r):
			addressLeft = true
		}
	}
	if addressLeft {
		out.Needs = append(out.Needs, "recipient address")
	}
	return out
}

// cleanURL drops query parameters named like credentials, naming them.
func cleanURL(raw string) (string, []string) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", []string{"url"}
	}
	var needs []string
	if u.User != nil {
		u.User = nil
		needs = append(needs, "url credentials")
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if credential.MatchString(k) {
			q.Del(k)
			needs = append(needs, "url parameter "+k)
		}
	}
	if len(needs) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String(), needs
}

func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// Marshal writes b as YAML.
func Marshal(b Bundle) ([]byte, error) {
	return yaml.MarshalWithOptions(b, yaml.Indent(2), yaml.IndentSequence(true))
}

// Unmarshal reads herald-bundle.yaml: the format first, so a newer one is
// refused plainly rather than misread, then the whole file strictly.
func Unmarshal(data []byte) (b Bundle, err error) {
	defer func() {
		// A parser failure on hostile input is a refusal, not a crash.
		if r := recover(); r != nil {
			b, err = Bundle{}, fmt.Errorf("%w: the YAML cannot be parsed", ErrInvalid)
		}
	}()
	// A bundle herald writes has no anchors; aliases in a hostile one
	// could make a few bytes decode into gigabytes.
	for _, tk := range lexer.Tokenize(string(data)) {
		if tk.Type == token.AnchorType || tk.Type == token.AliasType {
			return Bundle{}, fmt.Errorf("%w: YAML anchors and aliases are not taken", ErrInvalid)
		}
	}
	var head struct {
		Format int `yaml:"format"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return Bundle{}, fmt.Errorf("%w: %s", ErrInvalid, firstLine(err))
	}
	switch {
	case head.Format > Format:
		return Bundle{}, fmt.Errorf("%w: it is format %d and this herald reads format %d; upgrade herald to import it", ErrNewerFormat, head.Format, Format)
	case head.Format < 1:
		return Bundle{}, fmt.Errorf("%w: %s has no format version", ErrInvalid, FileName)
	}
	if err := yaml.UnmarshalWithOptions(data, &b, yaml.Strict()); err != nil {
		return Bundle{}, fmt.Errorf("%w: %s", ErrInvalid, firstLine(err))
	}
	if len(b.Tasks) > MaxTasks {
		return Bundle{}, fmt.Errorf("%w: more than %d tasks", ErrInvalid, MaxTasks)
	}
	return b, nil
}

// firstLine keeps a YAML error to its first line: the rest quotes the file.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// Write writes b as a bundle archive to w.
func Write(w io.Writer, b Bundle) error {
	data, err := Marshal(b)
	if err != nil {
		return fmt.Errorf("encode the bundle: %w", err)
	}
	zw := zip.NewWriter(w)
	f, err := zw.CreateHeader(&zip.FileHeader{Name: FileName, Method: zip.Deflate, Modified: b.Created})
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

// Read reads a bundle archive, refusing an unsafe one before anything of
// it is used (safezip), and a newer format plainly.
func Read(r io.Reader) (Bundle, error) {
	entries, err := safezip.Read(r, safezip.BundleLimits)
	if err != nil {
		return Bundle{}, err
	}
	for _, e := range entries {
		if e.Name == FileName {
			return Unmarshal(e.Data)
		}
	}
	return Bundle{}, fmt.Errorf("%w: the archive has no %s", ErrInvalid, FileName)
}

// IsArchive reports whether data starts like a ZIP archive.
func IsArchive(data []byte) bool {
	return bytes.HasPrefix(data, []byte("PK\x03\x04")) || bytes.HasPrefix(data, []byte("PK\x05\x06"))
}
