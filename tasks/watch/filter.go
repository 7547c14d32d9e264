package watch

import (
	"net/url"
	"strings"
)

// filter decides which items may produce item events. Keywords match
// case-insensitively anywhere in the title or in the URL's path and query
// (not its host, which every item of a source shares: "exam" must not match
// lms.example.edu); an exclude match wins over an include match; no include
// keywords means every item.
type filter struct {
	include, exclude []string
}

func newFilter(include, exclude []string) filter {
	return filter{include: lowerAll(include), exclude: lowerAll(exclude)}
}

func lowerAll(words []string) []string {
	var out []string
	for _, w := range words {
		if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// allows reports whether an item with this title and URL may produce an
// event.
func (f filter) allows(title, link string) bool {
	if len(f.include) == 0 && len(f.exclude) == 0 {
		return true
	}
	t, u := strings.ToLower(title), strings.ToLower(pathOf(link))
	has := func(w string) bool { return strings.Contains(t, w) || strings.Contains(u, w) }
	for _, w := range f.exclude {
		if has(w) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, w := range f.include {
		if has(w) {
			return true
		}
	}
	return false
}

// pathOf returns the part of link after its host.
func pathOf(link string) string {
	u, err := url.Parse(link)
	if err != nil || u.Host == "" {
		return link
	}
	u.Scheme, u.Host, u.User = "", "", nil
	return u.String()
}
