package source

import (
	"bytes"
	"cmp"
	"net/url"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/herald-bridge/herald/tasks/watch"
)

// parseFeed reads RSS 0.9x/1.0/2.0, Atom 1.0 or JSON Feed. The bytes are
// converted to UTF-8 first (toUTF8: the HTTP charset, the BOM, the XML
// declaration, then a fallback), so UTF-16 and UTF-32 feeds and feeds
// whose only charset is in the Content-Type read right. An XML feed that
// is not well-formed to its end is an error (scanXMLFeed), never a feed
// of fewer items. gofeed applies xml:base; links still relative after
// that are resolved against base, the URL the document was fetched from.
// Go's XML decoder does not expand DTD entities, so entity-expansion
// bombs stay inert.
//
// Identity: guid / Atom id / JSON Feed id, else the link, else a digest
// of what the item carries besides its title (enclosures, publication
// date, text: contentID), else the normalised title (an RSS item may have
// only a description; its title is then taken from the description). Ids
// that repeat are told apart (separate). Alt carries the link and the
// normalised title so the snapshot can match items across guid churn,
// and an item without guid or link whose text is edited by its title.
//
// Titles: an Atom title is text unless its type says html or xhtml; an
// RSS title has no declared type and is read as HTML only when it looks
// like HTML (plainTitle), so "Vector<T>" and "Why <br> breaks layout"
// keep their brackets.
func parseFeed(body []byte, contentType string, base *url.URL) ([]watch.Item, error) {
	body = toUTF8(body, contentType, true)
	var shape feedShape
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '<' {
		var err error
		if shape, err = scanXMLFeed(body); err != nil {
			return nil, err
		}
	}
	kind := gofeed.DetectFeedType(bytes.NewReader(body))
	feed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
	if err != nil {
		return nil, watch.Errorf(watch.Schema, "not a readable feed: %w", err)
	}
	cs := make([]candidate, 0, len(feed.Items))
	for i, it := range feed.Items {
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
		var title string
		switch {
		case kind == gofeed.FeedTypeJSON:
			title = normSpace(it.Title) // JSON Feed titles are plain text
		case kind == gofeed.FeedTypeAtom && i < len(shape.titleTypes):
			switch typ := shape.titleTypes[i]; {
			case strings.Contains(typ, "html"): // html, xhtml, Atom 0.3's text/html
				title = htmlText(it.Title)
			default: // Atom's default type is text
				title = normSpace(it.Title)
			}
		default:
			title = plainTitle(it.Title)
		}
		content := it.Content
		if content == "" {
			content = it.Description
		}
		text := plainText(content)
		if title == "" {
			title = truncate(text, 120)
		}
		nt := normTitle(title)
		// An item is known by its guid, else its link, else by what it
		// carries besides its title, else its title.
		id := cmp.Or(strings.TrimSpace(it.GUID), link, contentID(it, text), nt)
		if id == "" {
			continue // nothing to know it by
		}
		cs = append(cs, candidate{
			item: watch.Item{
				ID:     id,
				Title:  title,
				URL:    link,
				Digest: digest(title, link, text),
				Alt:    alt(id, link, nt),
			},
			link:  link,
			title: nt,
		})
		// The item's own text, for notices (not part of its identity).
		cs[len(cs)-1].item.Summary = watch.Summary(text, title)
	}
	return separate(cs), nil
}

// contentID identifies an item that has neither guid nor link by what a
// retitle leaves alone: its enclosures, its publication date and its
// text. Editing the text changes it, but the item keeps its normalised
// title in Alt, so the snapshot still knows it; only a retitle and a new
// text at once read as a different item. "" when there is none of these.
func contentID(it *gofeed.Item, text string) string {
	var parts []string
	for _, e := range it.Enclosures {
		if e != nil && strings.TrimSpace(e.URL) != "" {
			parts = append(parts, strings.TrimSpace(e.URL))
		}
	}
	date := strings.TrimSpace(it.Published)
	if it.PublishedParsed != nil {
		date = it.PublishedParsed.UTC().Format(time.RFC3339)
	}
	if len(parts) == 0 && date == "" && text == "" {
		return ""
	}
	parts = append(parts, date, text)
	return "sha256:" + digest(parts...)[:32]
}
