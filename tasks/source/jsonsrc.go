package source

import (
	"cmp"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// parseJSON reads the array at spec.Items ("" = the top-level array) and
// each element's id/title/link/due at their gjson paths. When the value
// there is an object rather than an array (a "latest release" API), the
// object is the one item. Unset paths fall back to common field names;
// for the link the human page (html_url, web_url) comes before an API
// url. Elements sharing an id stay separate items (separate). The digest covers the mapped fields and a
// body-like text field when present, not the whole element, so counters
// (downloads, stars) do not read as changes.
func parseJSON(body []byte, contentType string, base *url.URL, spec watch.Spec, zone *time.Location) ([]watch.Item, error) {
	body = toUTF8(body, contentType, false)
	if !gjson.ValidBytes(body) {
		return nil, watch.Errorf(watch.Schema, "response is not valid JSON")
	}
	arr := gjson.ParseBytes(body)
	if spec.Items != "" {
		arr = arr.Get(spec.Items)
	}
	var elems []gjson.Result
	switch {
	case arr.IsArray():
		elems = arr.Array()
	case arr.IsObject():
		elems = []gjson.Result{arr} // the document (or the value at the path) is the item
	default:
		if spec.Items == "" {
			return nil, watch.Errorf(watch.Schema, "response is neither a list nor an object")
		}
		return nil, watch.Errorf(watch.Schema, "items path %q is not an array", spec.Items)
	}
	var cs []candidate
	for _, el := range elems {
		if !el.IsObject() {
			return nil, watch.Errorf(watch.Schema, "items are not objects")
		}
		title := plainText(field(el, spec.Title, "title", "name", "subject", "summary").String())
		link := resolve(base, field(el, spec.Link, "html_url", "web_url", "permalink", "link", "url", "href").String())
		due := parseDue(field(el, spec.Due), zone)
		nt := normTitle(title)
		// An item is known by its id, else its link, else its title, else
		// its content.
		id := cmp.Or(strings.TrimSpace(field(el, spec.ID, "id", "uid", "guid", "key").String()), link, nt)
		if id == "" {
			id = "sha256:" + digest(el.Raw)[:32]
		}
		if title == "" {
			title = id
		}
		text := field(el, "", "body", "description", "content", "text").String()
		cs = append(cs, candidate{
			item: watch.Item{
				ID:      id,
				Title:   title,
				URL:     link,
				Due:     due,
				Digest:  digest(title, link, fmtTime(due), text),
				Alt:     alt(id, link, nt),
				Summary: watch.Summary(plainText(text), title),
				Lines:   jsonLines(title, link, fmtTime(due), text),
			},
			link:  link,
			title: nt,
		})
	}
	return separate(cs), nil
}

// jsonLines are the lines of a JSON item its digest covers, for its
// changed lines: the mapped fields one a line, then its text line by line.
func jsonLines(title, link, due, text string) []string {
	var b strings.Builder
	for _, f := range [][2]string{{"title", title}, {"url", link}, {"due", due}} {
		if f[1] != "" {
			b.WriteString(f[0] + ": " + f[1] + "\n")
		}
	}
	if looksLikeHTML(text) {
		text = kind.HTMLLines(text)
	}
	b.WriteString(text)
	return watch.Lines(b.String())
}

// field returns el at path, or at the first fallback that exists when path
// is empty.
func field(el gjson.Result, path string, fallbacks ...string) gjson.Result {
	if path != "" {
		return el.Get(path)
	}
	for _, f := range fallbacks {
		if r := el.Get(f); r.Exists() && r.Type != gjson.Null {
			return r
		}
	}
	return gjson.Result{}
}

// parseDue reads RFC 3339, unix seconds or milliseconds (number or
// numeric string), "YYYY-MM-DD HH:MM[:SS]" and "YYYY-MM-DD" (in zone).
// Anything else means no due time.
func parseDue(r gjson.Result, zone *time.Location) time.Time {
	switch r.Type {
	case gjson.Number:
		return unixTime(r.Float())
	case gjson.String:
	default:
		return time.Time{}
	}
	s := strings.TrimSpace(r.String())
	if s == "" {
		return time.Time{}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return unixTime(f)
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, zone); err == nil {
			return t
		}
	}
	return time.Time{}
}

func unixTime(f float64) time.Time {
	if f <= 0 || f > 1e15 {
		return time.Time{}
	}
	if f >= 1e11 { // milliseconds: 1e11 s is the year 5138
		return time.UnixMilli(int64(f)).UTC()
	}
	return time.Unix(int64(f), 0).UTC()
}
