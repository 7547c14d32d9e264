package source

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html/charset"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// parseHTML lists the elements matching sel. An element's identity is its
// first link's absolute href, else its normalised text (entries sharing a
// link stay separate items: separate). Its title is the text of a heading
// inside it, else its whole normalised text: a link's own text is often
// only "►" or "Read more". Its digest is its
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
	var cs []candidate
	doc.FindMatcher(sel).Each(func(_ int, el *goquery.Selection) {
		text := normSpace(el.Text())
		a := el
		if goquery.NodeName(el) != "a" {
			a = el.Find("a[href]").First()
		}
		href, _ := a.Attr("href")
		link := resolve(base, href)
		title := normSpace(el.Find("h1, h2, h3, h4, h5, h6").First().Text())
		if title == "" {
			title = truncate(text, 200)
		}
		lines := elementLines(el)
		id := link
		if id == "" {
			id = normTitle(text)
		}
		if id == "" {
			return
		}
		cs = append(cs, candidate{
			item: watch.Item{
				ID:      id,
				Title:   title,
				URL:     link,
				Digest:  digest(text),
				Alt:     alt(id, normTitle(title)),
				Summary: watch.Summary(strings.Join(lines, " "), title),
				Lines:   lines,
			},
			link:  link,
			title: normTitle(text),
		})
	})
	return separate(cs), nil
}

// elementLines is the element's text line by line, as its blocks and
// <br>s break it (watch.Lines).
func elementLines(el *goquery.Selection) []string {
	h, err := goquery.OuterHtml(el)
	if err != nil {
		return nil
	}
	return watch.Lines(kind.HTMLLines(h))
}
