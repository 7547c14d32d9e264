package source

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/mmcdole/gofeed"

	"github.com/herald-bridge/herald/tasks/watch"
)

// parseFeed reads RSS 0.9x/2.0, Atom 1.0 or JSON Feed. gofeed converts
// declared charsets (gb2312, windows-1251, ISO-8859-1 …) and applies
// xml:base; links still relative after that are resolved against base,
// the URL the document was fetched from. Go's XML decoder does not expand
// DTD entities, so entity-expansion bombs stay inert.
//
// Identity: guid / Atom id / JSON Feed id, else the link, else the
// normalised title. Alt carries the link and the normalised title so the
// snapshot can match items across guid churn.
func parseFeed(body []byte, base *url.URL) ([]watch.Item, error) {
	feed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
	if err != nil {
		return nil, watch.Errorf(watch.Schema, "not a readable feed: %w", err)
	}
	items := make([]watch.Item, 0, len(feed.Items))
	seen := make(map[string]bool, len(feed.Items))
	for _, it := range feed.Items {
		if it == nil {
			continue
		}
		link := resolve(base, it.Link)
		if link == "" {
			for _, l := range it.Links {
				if link = resolve(base, l); link != "" {
					break
				}
			}
		}
		title := plainText(it.Title)
		nt := normTitle(title)
		id := strings.TrimSpace(it.GUID)
		switch {
		case id != "":
		case link != "":
			id = link
		case nt != "":
			id = nt
		default:
			continue // nothing to know it by
		}
		if seen[id] {
			continue // a repeated guid: the first (newest) entry wins
		}
		seen[id] = true
		content := it.Content
		if content == "" {
			content = it.Description
		}
		if title == "" {
			title = truncate(plainText(content), 120)
		}
		items = append(items, watch.Item{
			ID:     id,
			Title:  title,
			URL:    link,
			Digest: digest(title, link, plainText(content)),
			Alt:    alt(id, link, nt),
		})
	}
	return items, nil
}
