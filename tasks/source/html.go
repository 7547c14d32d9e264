package source

import (
	"bytes"
	"net/url"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html/charset"

	"github.com/herald-bridge/herald/tasks/watch"
)

// parseHTML lists the elements matching sel. An element's identity is its
// first link's absolute href, else its normalised text; its digest is its
// whitespace-normalised text, so reordering a list changes no digest and
// editing one entry changes exactly one. Relative hrefs resolve against
// <base href> when present, else against the page URL. The page's charset
// comes from the Content-Type, a BOM or a <meta> declaration.
func parseHTML(body []byte, contentType string, base *url.URL, sel cascadia.Selector) ([]watch.Item, error) {
	if sel == nil {
		return nil, watch.Errorf(watch.Schema, "html source needs a selector")
	}
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return nil, watch.Errorf(watch.Schema, "page charset: %w", err)
	}
	doc, err := goquery.NewDocumentFromReader(r)
	if err != nil {
		return nil, watch.Errorf(watch.Schema, "not a readable page: %w", err)
	}
	if href, ok := doc.Find("base[href]").First().Attr("href"); ok {
		if b := resolve(base, href); b != "" {
			if u, err := url.Parse(b); err == nil {
				base = u
			}
		}
	}
	var items []watch.Item
	seen := map[string]bool{}
	doc.FindMatcher(sel).Each(func(_ int, el *goquery.Selection) {
		text := normSpace(el.Text())
		a := el
		if goquery.NodeName(el) != "a" {
			a = el.Find("a[href]").First()
		}
		href, _ := a.Attr("href")
		link := resolve(base, href)
		title := normSpace(a.Text())
		if link == "" || title == "" {
			title = truncate(text, 200)
		}
		id := link
		if id == "" {
			id = normTitle(text)
		}
		if id == "" || seen[id] {
			return
		}
		seen[id] = true
		items = append(items, watch.Item{
			ID:     id,
			Title:  title,
			URL:    link,
			Digest: digest(text),
			Alt:    alt(id, normTitle(title)),
		})
	})
	return items, nil
}
