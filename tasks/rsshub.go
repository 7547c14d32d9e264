package tasks

import (
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/tasks/source"
)

// rsshubRoute turns a request for an RSSHub route ("rsshub:/ustc/jwc/info",
// or kind rsshub with the route as its address) into one whose URL is the
// route on the first configured instance, the URL its approval, scope and
// host limits judge; the source asks every instance at each run (SPEC
// §18). It returns the route, or "" for any other request.
func (p Policy) rsshubRoute(s *Submission) (string, error) {
	raw := strings.TrimSpace(s.URL)
	if !source.IsRoute(raw) && (s.Kind != source.KindRSSHub || !strings.HasPrefix(raw, "/")) {
		if s.Kind == source.KindRSSHub {
			return "", userErr(ErrInvalid, "bad_route", "an RSSHub watch names a route, as rsshub:/ustc/jwc/info")
		}
		return "", nil
	}
	route, err := source.CleanRoute(raw)
	if err != nil {
		return "", userErr(ErrInvalid, "bad_route", "an RSSHub watch names a route, as rsshub:/ustc/jwc/info")
	}
	if len(p.RSSHub) == 0 {
		return "", userErr(ErrInvalid, "no_rsshub_instance", "no RSSHub instance is configured here; an admin adds one under sources.rsshub.instances")
	}
	base, err := url.Parse(p.RSSHub[0])
	if err != nil {
		return "", userErr(ErrInvalid, "no_rsshub_instance", "no RSSHub instance is configured here; an admin adds one under sources.rsshub.instances")
	}
	s.URL, s.Kind = source.RouteURL(base, route).String(), source.KindRSSHub
	return route, nil
}
