package source

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/watch"
)

// parseJSON reads the array at spec.Items ("" = the top-level array) and
// each element's id/title/link/due at their gjson paths. Unset paths fall
// back to common field names. The digest covers the mapped fields and a
// body-like text field when present, not the whole element, so counters
// (downloads, stars) do not read as changes.
func parseJSON(body []byte, base *url.URL, spec watch.Spec, zone *time.Location) ([]watch.Item, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if !gjson.ValidBytes(body) {
		return nil, watch.Errorf(watch.Schema, "response is not valid JSON")
	}
	arr := gjson.ParseBytes(body)
	if spec.Items != "" {
		arr = arr.Get(spec.Items)
	}
	if !arr.IsArray() {
		return nil, watch.Errorf(watch.Schema, "items path %q is not an array", spec.Items)
	}
	var items []watch.Item
	var err error
	seen := map[string]bool{}
	arr.ForEach(func(_, el gjson.Result) bool {
		if !el.IsObject() {
			err = watch.Errorf(watch.Schema, "items are not objects")
			return false
		}
		title := plainText(field(el, spec.Title, "title", "name", "subject", "summary").String())
		link := resolve(base, field(el, spec.Link, "url", "link", "html_url", "href").String())
		due := parseDue(field(el, spec.Due), zone)
		id := strings.TrimSpace(field(el, spec.ID, "id", "uid", "guid", "key").String())
		nt := normTitle(title)
		switch {
		case id != "":
		case link != "":
			id = link
		case nt != "":
			id = nt
		default:
			id = "sha256:" + digest(el.Raw)[:32]
		}
		if seen[id] {
			return true
		}
		seen[id] = true
		if title == "" {
			title = id
		}
		text := field(el, "", "body", "description", "content", "text").String()
		items = append(items, watch.Item{
			ID:     id,
			Title:  title,
			URL:    link,
			Due:    due,
			Digest: digest(title, link, fmtTime(due), text),
			Alt:    alt(id, link, nt),
		})
		return true
	})
	if err != nil {
		return nil, err
	}
	return items, nil
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
