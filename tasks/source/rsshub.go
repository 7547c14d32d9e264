package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// KindRSSHub reads an RSSHub route through the configured instances.
const KindRSSHub = "rsshub"

// RouteScheme starts a route written as an address in chat and imports
// ("rsshub:/ustc/jwc/info").
const RouteScheme = "rsshub:"

// neutralBase stands for whichever instance answered in item identities
// and digests: an item an instance links to under its own address is the
// same item on every instance, so a move between them announces nothing
// (SPEC §18).
const neutralBase = "rsshub:"

// Instance is one configured RSSHub instance (sources.rsshub.instances).
type Instance = kind.Instance

// rsshubKind asks each instance in order for the route and stays on the
// first that answers. A 5xx, a 429, a timeout or a connection failure
// (all class Transient) moves on to the next; a 404 is the route's fault
// and ends the run as NotFound, as does any other answer.
var rsshubKind = kind.Kind{
	Name:       KindRSSHub,
	Instances:  true,
	Accept:     feedAccept,
	JSONObject: jsonFeedObject,
	Run:        runRSSHub,
}

// errNoInstance: no instance is configured.
var errNoInstance = errors.New("no RSSHub instance is configured (sources.rsshub.instances)")

func runRSSHub(ctx context.Context, g kind.Getter, in kind.Input) ([]watch.Item, error) {
	route, err := CleanRoute(in.Spec.Route)
	if err != nil {
		return nil, watch.Classify(watch.Schema, err)
	}
	if len(in.Instances) == 0 {
		return nil, watch.Classify(watch.Schema, errNoInstance)
	}
	var failed []string
	for i, inst := range in.Instances {
		items, err := askInstance(ctx, g, inst, route, len(in.Instances)-i)
		if err == nil {
			return items, nil
		}
		if ctx.Err() != nil || watch.ClassOf(err) != watch.Transient {
			return nil, err
		}
		if we := (*watch.Error)(nil); errors.As(err, &we) {
			err = we.Err
		}
		failed = append(failed, err.Error())
	}
	return nil, watch.Errorf(watch.Transient, "every RSSHub instance failed: %s", strings.Join(failed, "; "))
}

// askInstance fetches route from inst within its share of what is left
// of the run's deadline (left instances are still to be asked), and reads
// the feed with identities that do not name the instance.
func askInstance(ctx context.Context, g kind.Getter, inst Instance, route string, left int) ([]watch.Item, error) {
	if dl, ok := ctx.Deadline(); ok && left > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(left))
		defer cancel()
	}
	base := RouteURL(inst.URL, route)
	ask := *base
	if inst.Key != "" {
		q := ask.Query()
		q.Set("key", inst.Key)
		ask.RawQuery = q.Encode()
	}
	doc, err := g.Do(ctx, kind.Request{URL: &ask})
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(inst.URL.String(), "/")
	neutral := func(s string) string {
		if rest, ok := strings.CutPrefix(s, prefix); ok && (rest == "" || rest[0] == '/' || rest[0] == '?' || rest[0] == '#') {
			return neutralBase + rest
		}
		return s
	}
	items, err := parseFeedAs(doc.Body, doc.ContentType, base, neutral)
	if err == nil {
		doc.Title = feedTitle(doc.Body, doc.ContentType) // the route's feed names an unnamed task
	}
	return items, err
}

// RouteURL is route on the instance at base (its path prefix kept); the
// route's own escaping ("/twitter/user/%E4%B8%AD") is kept as written.
func RouteURL(base *url.URL, route string) *url.URL {
	ref, err := url.Parse(route)
	if err != nil {
		ref = &url.URL{Path: route}
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + ref.Path
	u.RawPath = strings.TrimSuffix(base.EscapedPath(), "/") + ref.EscapedPath()
	u.RawQuery, u.Fragment, u.RawFragment = ref.RawQuery, "", ""
	return &u
}

// CleanRoute checks an RSSHub route as written in chat or config
// ("/ustc/jwc/info", "rsshub:/ustc/jwc/info"): a path of at least one
// namespace segment, with an optional query, and no scheme, host, space,
// fragment or dot segment.
func CleanRoute(raw string) (string, error) {
	r := strings.TrimSpace(raw)
	if len(r) >= len(RouteScheme) && strings.EqualFold(r[:len(RouteScheme)], RouteScheme) {
		r = r[len(RouteScheme):]
	}
	path, _, _ := strings.Cut(r, "?")
	switch {
	case !strings.HasPrefix(r, "/") || strings.HasPrefix(r, "//"):
		return "", fmt.Errorf("%w: an RSSHub route starts with / (as /ustc/jwc/info)", ErrInvalidSpec)
	case strings.Trim(path, "/") == "":
		return "", fmt.Errorf("%w: the RSSHub route names no namespace", ErrInvalidSpec)
	case strings.ContainsAny(r, " \t\r\n#\\"):
		return "", fmt.Errorf("%w: the RSSHub route has a space, # or backslash", ErrInvalidSpec)
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("%w: the RSSHub route has a dot segment", ErrInvalidSpec)
		}
	}
	if _, err := url.Parse(r); err != nil {
		return "", fmt.Errorf("%w: the RSSHub route does not parse", ErrInvalidSpec)
	}
	return r, nil
}

// IsRoute reports whether raw is written as an RSSHub route address.
func IsRoute(raw string) bool {
	r := strings.TrimSpace(raw)
	return len(r) > len(RouteScheme) && strings.EqualFold(r[:len(RouteScheme)], RouteScheme)
}

// Shown is how a watch's source is shown to people: an rsshub watch as
// its route, any other as ShowURL shows its URL.
func Shown(spec watch.Spec) string {
	if spec.Kind == KindRSSHub && spec.Route != "" {
		if route, err := CleanRoute(spec.Route); err == nil {
			return RouteScheme + route
		}
	}
	return ShowURL(spec.URL)
}
