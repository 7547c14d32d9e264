package source

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/watch"
)

// RadarPath is where an RSSHub instance serves its Radar rules: the
// routes it offers for pages of each site.
const RadarPath = "/api/radar/rules"

// RadarTTL is how long an instance's Radar rules are kept in memory: they
// change only with the instance's release, and a full list is large.
const RadarTTL = time.Hour

// radarKept holds each instance's rules (by its base URL and key) for
// RadarTTL, at most maxRadarKept instances.
var radarKept = struct {
	sync.Mutex
	m map[string]radarRules
}{m: map[string]radarRules{}}

type radarRules struct {
	body []byte
	at   time.Time
}

const maxRadarKept = 8

// FetchRadar reads inst's Radar rules through the guarded client o
// describes (the access key sent as ?key=, never shown), or returns the
// copy read within RadarTTL.
func FetchRadar(ctx context.Context, inst Instance, o Options) ([]byte, error) {
	key := inst.URL.String() + "\x00" + inst.Key
	radarKept.Lock()
	kept, ok := radarKept.m[key]
	radarKept.Unlock()
	if ok && time.Since(kept.at) < RadarTTL {
		return kept.body, nil
	}
	body, err := fetchRadar(ctx, inst, o)
	if err != nil {
		return nil, err
	}
	radarKept.Lock()
	defer radarKept.Unlock()
	if len(radarKept.m) >= maxRadarKept {
		clear(radarKept.m)
	}
	radarKept.m[key] = radarRules{body: body, at: time.Now()}
	return body, nil
}

func fetchRadar(ctx context.Context, inst Instance, o Options) ([]byte, error) {
	u := RouteURL(inst.URL, RadarPath)
	if inst.Key != "" {
		u.RawQuery = url.Values{"key": {inst.Key}}.Encode()
	}
	s, err := New(watch.Spec{Kind: KindJSON, URL: u.String()}, o)
	if err != nil {
		return nil, err
	}
	doc, err := s.fetch(ctx, watch.Conditional{})
	if err != nil {
		return nil, err
	}
	return doc.body, nil
}

// MatchRadar lists the routes Radar rules offer for page, as RSSHub
// serves them: {"<domain>": {"_name": …, "<subdomain or '.'>": [{"title",
// "source": [path patterns], "target": "/<namespace>/<route>"}]}}. A
// pattern's ":name" matches one path segment (":name?" optionally) and
// "*" the rest; the target's ":name" takes what it matched. Rules whose
// target is not a string, or names a parameter the page did not give,
// are skipped.
func MatchRadar(rules []byte, page *url.URL) []Feed {
	if !gjson.ValidBytes(rules) || page == nil {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(page.Hostname()), ".")
	var out []Feed
	seen := map[string]bool{}
	gjson.ParseBytes(rules).ForEach(func(domain, site gjson.Result) bool {
		d := strings.ToLower(domain.String())
		var subs []string
		switch {
		case host == d:
			subs = []string{"."}
		case strings.HasSuffix(host, "."+d):
			sub := strings.TrimSuffix(host, "."+d)
			subs = []string{sub}
			if sub == "www" {
				subs = append(subs, ".")
			}
		default:
			return true
		}
		name := site.Get("_name").String()
		for _, sub := range subs {
			site.Get(gjson.Escape(sub)).ForEach(func(_, rule gjson.Result) bool {
				target := rule.Get("target")
				if target.Type != gjson.String {
					return true
				}
				for _, src := range rule.Get("source").Array() {
					params, ok := matchPattern(src.String(), page.Path)
					if !ok {
						continue
					}
					route, ok := fillTarget(target.String(), params)
					if !ok || seen[route] {
						continue
					}
					if _, err := CleanRoute(route); err != nil {
						continue
					}
					seen[route] = true
					title := rule.Get("title").String()
					if name != "" {
						title = name + " - " + title
					}
					out = append(out, Feed{Title: normSpace(title), URL: RouteScheme + route})
					break
				}
				return len(out) < MaxFeeds
			})
		}
		return len(out) < MaxFeeds
	})
	return out
}

// matchPattern matches a Radar source pattern against path. A pattern
// written with its host ("github.com/:user") is read from its first "/".
func matchPattern(pattern, path string) (map[string]string, bool) {
	pattern, _, _ = strings.Cut(pattern, "?")
	if i := strings.Index(pattern, "/"); i > 0 {
		pattern = pattern[i:]
	} else if i < 0 {
		return nil, false
	}
	ps := segments(pattern)
	xs := segments(path)
	params := map[string]string{}
	i := 0
	for _, p := range ps {
		switch {
		case p == "*":
			return params, true
		case strings.HasPrefix(p, ":"):
			name, optional := strings.CutSuffix(p[1:], "?")
			if i < len(xs) {
				v, err := url.PathUnescape(xs[i])
				if err != nil {
					return nil, false
				}
				params[name] = v
				i++
			} else if !optional {
				return nil, false
			}
		default:
			if i >= len(xs) || xs[i] != p {
				return nil, false
			}
			i++
		}
	}
	return params, i == len(xs)
}

// fillTarget puts the matched parameters into a target route.
func fillTarget(target string, params map[string]string) (string, bool) {
	var out []string
	for _, seg := range segments(target) {
		if !strings.HasPrefix(seg, ":") {
			out = append(out, seg)
			continue
		}
		name, optional := strings.CutSuffix(seg[1:], "?")
		v, ok := params[name]
		switch {
		case ok && v != "":
			out = append(out, url.PathEscape(v))
		case !optional:
			return "", false
		}
	}
	return "/" + strings.Join(out, "/"), len(out) > 0
}

func segments(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
