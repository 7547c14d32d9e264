// Package opml reads and writes the feed lists other readers exchange:
// OPML 2.0 outlines with an xmlUrl. Reading is lenient — folders nested
// to any depth (their names become a prefix of the task's name), HTML
// entities, unescaped ampersands, the charset the prolog declares —
// because real exports are. Writing gives the self-closing
// <outline type="rss" …/> every reader takes, with herald's own settings
// in attributes of herald's namespace, so a round trip keeps them.
package opml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/net/html/charset"

	"github.com/herald-bridge/herald/tasks/bundle"
)

// Namespace is the XML namespace of herald's own outline attributes.
const Namespace = "https://herald-bridge.github.io/ns/opml"

// Limits on what one file may hold.
const (
	MaxBytes = 8 << 20
	MaxFeeds = 1000
	maxDepth = 64
)

// FolderSep joins folder names and the feed's own name into a task name.
const FolderSep = " / "

// ErrInvalid is wrapped when the file is not an OPML feed list.
var ErrInvalid = errors.New("not an OPML feed list")

// Read reads the feeds of an OPML document as rss tasks.
func Read(r io.Reader) ([]bundle.Task, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the OPML file: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: the file is larger than %d MiB", ErrInvalid, MaxBytes>>20)
	}
	d := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charset.NewReaderLabel
	var (
		out     []bundle.Task
		folders []string // names of the open outlines (feeds open as "")
		inOPML  bool
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if inOPML && len(out) > 0 && len(folders) == 0 {
				break // trailing garbage after the last outline
			}
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch strings.ToLower(t.Name.Local) {
			case "opml":
				inOPML = true
			case "outline":
				if len(folders) >= maxDepth {
					return nil, fmt.Errorf("%w: outlines nested deeper than %d", ErrInvalid, maxDepth)
				}
				task, feed := outline(t.Attr, folders)
				if feed {
					if len(out) == MaxFeeds {
						return nil, fmt.Errorf("%w: more than %d feeds", ErrInvalid, MaxFeeds)
					}
					out = append(out, task)
					folders = append(folders, "")
				} else {
					folders = append(folders, task.Name)
				}
			}
		case xml.EndElement:
			if strings.EqualFold(t.Name.Local, "outline") && len(folders) > 0 {
				folders = folders[:len(folders)-1]
			}
		}
	}
	if !inOPML {
		return nil, fmt.Errorf("%w: no <opml> element", ErrInvalid)
	}
	return out, nil
}

// outline reads one <outline>: a feed when it has an xmlUrl, else a folder
// whose name is task.Name.
func outline(attrs []xml.Attr, folders []string) (task bundle.Task, feed bool) {
	var text, title, xmlURL string
	for _, a := range attrs {
		v := strings.TrimSpace(a.Value)
		if a.Name.Space == Namespace || a.Name.Space == "herald" {
			setting(&task, strings.ToLower(a.Name.Local), v)
			continue
		}
		switch strings.ToLower(a.Name.Local) {
		case "text":
			text = v
		case "title":
			title = v
		case "xmlurl":
			xmlURL = v
		}
	}
	name := cmp(text, title)
	if xmlURL == "" {
		return bundle.Task{Name: name}, false
	}
	var path []string
	for _, f := range folders {
		if f != "" {
			path = append(path, f)
		}
	}
	if name != "" || len(path) > 0 {
		task.Name = strings.Join(append(path, cmp(name, xmlURL)), FolderSep)
	}
	task.Source = bundle.Source{Kind: "rss", URL: feedScheme(xmlURL)}
	return task, true
}

// feedScheme turns the feed: scheme some readers write (feed://host/…,
// feed:https://host/…) into the web address it stands for.
func feedScheme(u string) string {
	lower := strings.ToLower(u)
	switch {
	case strings.HasPrefix(lower, "feed:http://"), strings.HasPrefix(lower, "feed:https://"):
		return u[len("feed:"):]
	case strings.HasPrefix(lower, "feed://"):
		return "https://" + u[len("feed://"):]
	}
	return u
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// setting reads one of herald's attributes into task.
func setting(task *bundle.Task, name, v string) {
	switch name {
	case "schedule":
		task.Schedule = v
	case "remind":
		task.RemindBefore = list(v)
	case "include":
		task.Include = list(v)
	case "exclude":
		task.Exclude = list(v)
	case "notify":
		task.Notify = list(v)
	}
}

func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Write writes the rss tasks of list as an OPML 2.0 document, one
// self-closing outline each; tasks of other kinds, and tasks the export
// took a secret from, are left out (OPML lists feeds). It returns how
// many it wrote. The markup is written here, its text escaped by
// encoding/xml: the encoder never writes a self-closing element.
func Write(w io.Writer, title string, created time.Time, list []bundle.Task) (int, error) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<opml version="2.0" xmlns:herald="` + Namespace + `">` + "\n")
	b.WriteString("  <head>\n    <title>" + escape(title) + "</title>\n")
	b.WriteString("    <dateCreated>" + created.UTC().Format(time.RFC1123Z) + "</dateCreated>\n  </head>\n  <body>\n")
	n := 0
	for _, t := range list {
		if t.Source.Kind != "rss" || len(t.Needs) > 0 {
			continue
		}
		b.WriteString(`    <outline type="rss" text="` + escape(cmp(t.Name, t.Source.URL)) + `" xmlUrl="` + escape(t.Source.URL) + `"`)
		for _, a := range []struct{ name, value string }{
			{"schedule", t.Schedule}, {"remind", strings.Join(t.RemindBefore, ",")},
			{"include", strings.Join(t.Include, ",")}, {"exclude", strings.Join(t.Exclude, ",")},
			{"notify", strings.Join(t.Notify, ",")},
		} {
			if a.value != "" {
				b.WriteString(` herald:` + a.name + `="` + escape(a.value) + `"`)
			}
		}
		b.WriteString("/>\n")
		n++
	}
	b.WriteString("  </body>\n</opml>\n")
	_, err := io.WriteString(w, b.String())
	return n, err
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
