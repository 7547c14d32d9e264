package source

import (
	"bytes"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html/charset"
)

// guessSelector picks a selector for a page watched without one: the
// repeated structure that lists its entries. Two or more <article>
// elements win; otherwise the largest group of three or more siblings of
// one tag and class whose members carry a link and some text, outside
// navigation, header, footer and asides. ok is false when the page shows
// no such structure.
func guessSelector(body []byte, contentType string) (sel string, ok bool) {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return "", false
	}
	doc, err := goquery.NewDocumentFromReader(r)
	if err != nil {
		return "", false
	}
	if n := doc.Find("article").Not("nav article, header article, footer article, aside article").Length(); n >= 2 {
		return "article", true
	}
	type group struct {
		sel   string
		n     int
		score float64
	}
	var best *group
	doc.Find("body *").Each(func(_ int, parent *goquery.Selection) {
		if parent.Closest("nav, header, footer, aside, form, select, script, style, head").Length() > 0 {
			return
		}
		counts := map[string][]*goquery.Selection{}
		parent.Children().Each(func(_ int, c *goquery.Selection) {
			tag := goquery.NodeName(c)
			switch tag {
			case "script", "style", "br", "hr", "img", "input", "option", "meta", "link":
				return
			}
			counts[tag+firstClass(c)] = append(counts[tag+firstClass(c)], c)
		})
		for key, members := range counts {
			if len(members) < 3 {
				continue
			}
			linked, text := 0, 0
			for _, m := range members {
				if goquery.NodeName(m) == "a" || m.Find("a[href]").Length() > 0 {
					linked++
				}
				text += len([]rune(normSpace(m.Text())))
			}
			avg := float64(text) / float64(len(members))
			if linked*2 < len(members) || avg < 8 {
				continue
			}
			score := float64(len(members)) * float64(linked) / float64(len(members)) * min(avg, 200)
			if best == nil || score > best.score {
				best = &group{sel: childSelector(parent, key), n: len(members), score: score}
			}
		}
	})
	if best == nil {
		return "", false
	}
	// The selector must select this group and not much else.
	if c, err := cascadia.Compile(best.sel); err != nil || len(c.MatchAll(doc.Nodes[0])) > 2*best.n {
		return "", false
	}
	return best.sel, true
}

// firstClass is ".class" for an element's first usable class, or "".
func firstClass(s *goquery.Selection) string {
	cls, _ := s.Attr("class")
	for _, c := range strings.Fields(cls) {
		if cssIdent(c) {
			return "." + c
		}
	}
	return ""
}

// childSelector names the children key (tag[.class]) of parent: alone
// when it has a class, else under the parent's id or class.
func childSelector(parent *goquery.Selection, key string) string {
	if strings.Contains(key, ".") {
		return key
	}
	if id, ok := parent.Attr("id"); ok && cssIdent(id) {
		return "#" + id + " > " + key
	}
	return goquery.NodeName(parent) + firstClass(parent) + " > " + key
}

func cssIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
