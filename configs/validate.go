package configs

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
	_ "time/tzdata" // zones are validated against embedded tzdata

	"github.com/herald-bridge/herald/configs/closest"
	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/source/browser"
	"github.com/herald-bridge/herald/tasks/watch"
)

// parseSchedule validates a schedule string (docs/configuration.md, Configuration: schedules) in the default zone.
// Tests replace it with a stand-in.
var parseSchedule = func(text string, defaultZone *time.Location) error {
	_, err := schedule.Parse(text, defaultZone)
	return err
}

// validator checks a decoded configuration, reporting each problem at the
// line of the value it concerns.
type validator struct {
	cfg *Config
	d   *decoder
	ps  *problems
	// used marks paths whose unset variables were already dealt with.
	used map[string]bool
}

// line returns the line of path, or of its nearest recorded ancestor.
func (v *validator) line(path string) int {
	for {
		if l, ok := v.d.lines[path]; ok && l > 0 {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return v.d.lines[""]
		}
		path = path[:i]
	}
}

func (v *validator) errf(path, format string, args ...any) {
	v.ps.add(v.d.file, v.line(path), "%s: %s", where(path), fmt.Sprintf(format, args...))
}

// unsetErr reports unset variables named by path, once.
func (v *validator) unsetErr(path string) bool {
	names := v.d.unset[path]
	if len(names) == 0 || v.used[path] {
		return len(names) > 0
	}
	v.used[path] = true
	for _, n := range names {
		v.errf(path, "uses ${%s}, which is not set", n)
	}
	return true
}

// skip marks path's unset variables as belonging to a feature that is off.
func (v *validator) skip(prefix string) {
	for p := range v.d.unset {
		if p == prefix || strings.HasPrefix(p, prefix+".") || strings.HasPrefix(p, prefix+"[") {
			v.used[p] = true
		}
	}
}

func (v *validator) validate() {
	v.used = map[string]bool{}
	c := v.cfg

	v.server()
	v.store()
	if loc, err := loadZone(c.Timezone); err != nil {
		v.errf("timezone", "%v", err)
		c.Location = time.UTC
	} else {
		c.Location = loc
	}
	v.language("language", c.Language)
	v.channels()
	v.policy()
	v.recipients()
	v.notices()
	v.inbound()
	v.tasks()
	v.rsshub()
	v.assistant()
	v.history()
	v.network()
	v.browser()
	v.digests()

	// Any unset variable not handled above belongs to a feature in use.
	paths := make([]string, 0, len(v.d.unset))
	for p := range v.d.unset {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		v.unsetErr(p)
	}
}

func (v *validator) language(path, lang string) {
	switch lang {
	case "", "en", "zh":
	default:
		v.errf(path, "unknown language %s (want en or zh)", v.d.quote(path, lang))
	}
}

// loadZone resolves an IANA zone name; "" is UTC.
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if name == "Local" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
		return nil, fmt.Errorf("unknown time zone %q (want an IANA name such as Asia/Shanghai)", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		if z := closest.Name(name, closest.Zones); z != "" {
			return nil, fmt.Errorf("unknown time zone %q (did you mean %s?)", name, z)
		}
		return nil, fmt.Errorf("unknown time zone %q (want an IANA name such as Asia/Shanghai)", name)
	}
	return loc, nil
}

// didYouMean is " (did you mean "X"?)" for the known name closest to
// name, when one is close enough to be a slip of the keyboard, else "".
func didYouMean(name string, known []string) string {
	slices.Sort(known) // the same suggestion on every run
	if c := closest.Name(name, known); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

func (v *validator) server() {
	s := v.cfg.Server
	if _, _, err := net.SplitHostPort(s.Listen); err != nil {
		v.errf("server.listen", "want host:port such as 127.0.0.1:8080")
	}
	if s.PublicURL != "" {
		v.httpsURL("server.public_url", s.PublicURL, true)
	}
	if (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		v.errf("server.tls", "set both cert_file and key_file, or neither")
	}
	v.listener()
}

func (v *validator) store() {
	s := v.cfg.Store
	if r := s.Retention.D(); !v.d.bad["store.retention"] && (r < MinLedgerRetention || r > MaxLedgerRetention) {
		v.errf("store.retention", "must be between 1m and %dd", MaxLedgerRetention/(24*time.Hour))
	}
	switch s.Driver {
	case DriverBolt:
		v.skip("store.redis")
	case DriverRedis:
		if s.Redis.URL == "" {
			if !v.unsetErr("store.redis.url") {
				v.errf("store.redis.url", "is required when driver is redis")
			}
			return
		}
		u, err := url.Parse(s.Redis.URL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
			v.errf("store.redis.url", "want a redis://, rediss:// or unix:// URL")
		}
		if n := s.Redis.Shards; n < 1 || n > MaxRedisShards {
			v.errf("store.redis.shards", "must be between 1 and %d (scheduling shards shared by the replicas)", MaxRedisShards)
		}
		if d := time.Duration(s.Redis.LeaseTTL); d < MinLeaseTTL || d > MaxLeaseTTL {
			v.errf("store.redis.lease_ttl", "must be between %v and %v", MinLeaseTTL, MaxLeaseTTL)
		}
	default:
		v.errf("store.driver", "unknown driver %s (want bolt or redis)", v.d.quote("store.driver", s.Driver))
	}
}

// httpsURL checks that raw is an https URL; plain http is accepted only
// for loopback hosts when policy.allow_private_networks is true (or
// loopbackHTTP is set). The URL itself is never printed: it may hold a
// token.
func (v *validator) httpsURL(path, raw string, loopbackHTTP bool) bool {
	if v.unsetErr(path) && raw == "" {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" || u.User != nil {
		v.errf(path, "not a valid absolute URL")
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		if isLoopback(u.Hostname()) && (loopbackHTTP || v.cfg.Policy.AllowPrivateNetworks) {
			return true
		}
		v.errf(path, "must use https (http only for loopback hosts with policy.allow_private_networks: true)")
	default:
		v.errf(path, "must use https")
	}
	return false
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// principal kinds accepted in policy lists.
func validPrincipal(p string, wildcard bool) bool { return address.ValidPattern(p, wildcard) }

func (v *validator) principals(path string, list []string, wildcard bool) {
	for i, p := range list {
		ep := fmt.Sprintf("%s[%d]", path, i)
		if v.unsetErr(ep) {
			continue
		}
		if !validPrincipal(p, wildcard) {
			want := address.Forms()
			if wildcard {
				want += " (or " + address.Patterns() + ")"
			}
			v.errf(ep, "malformed principal %s (want %s)", v.d.quote(ep, p), want)
		}
	}
}

var hostPattern = regexp.MustCompile(`^(\*|(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)$`)

func (v *validator) hosts(path string, list []string) {
	for i, h := range list {
		ep := fmt.Sprintf("%s[%d]", path, i)
		if !hostPattern.MatchString(strings.ToLower(h)) && net.ParseIP(h) == nil {
			v.errf(ep, "malformed host %s (want a host name, *.domain or *)", v.d.quote(ep, h))
		}
	}
}

func (v *validator) policy() {
	p := v.cfg.Policy
	v.principals("policy.admins", p.Admins, false)
	for i, a := range p.Admins {
		if address.IsAgent(a) {
			ep := fmt.Sprintf("policy.admins[%d]", i)
			v.errf(ep, "an agent cannot be an admin (%s): agents may only list and request watches", v.d.quote(ep, a))
		}
	}
	v.principals("policy.requesters", p.Requesters, true)
	v.hosts("policy.allowed_hosts", p.AllowedHosts)
	v.downloadPolicy()
	for i, r := range p.AutoApprove {
		rp := fmt.Sprintf("policy.auto_approve[%d]", i)
		if len(r.Principals) == 0 || len(r.Hosts) == 0 {
			v.errf(rp, "needs principals and hosts")
		}
		v.principals(rp+".principals", r.Principals, true)
		v.hosts(rp+".hosts", r.Hosts)
	}
	v.limit("policy.limits.max_tasks", p.Limits.MaxTasks, MaxMaxTasks)
	v.limit("policy.limits.max_tasks_per_owner", p.Limits.MaxTasksPerOwner, MaxMaxPerOwner)
	if n := len(v.cfg.Tasks); n > p.Limits.MaxTasks && p.Limits.MaxTasks > 0 {
		// Config-declared tasks count toward the total (I7).
		v.errf("policy.limits.max_tasks", "the file declares %d tasks, more than max_tasks (%d) allows in all", n, p.Limits.MaxTasks)
	}
	v.limit("policy.limits.per_host.concurrency", p.Limits.PerHost.Concurrency, MaxPerHostRuns)
	v.limit("policy.limits.per_host.per_minute", p.Limits.PerHost.PerMinute, MaxPerHostMinute)
	v.limit("policy.limits.chat.per_minute", p.Limits.Chat.PerMinute, MaxChatPerMinute)
	v.limit("policy.limits.chat.burst", p.Limits.Chat.Burst, MaxChatBurst)
	v.limit("policy.limits.history_runs", p.Limits.HistoryRuns, DefaultHistoryRuns)
	v.limit("policy.limits.max_items_per_run", p.Limits.MaxItemsPerRun, DefaultMaxItemsPerRun)
	// Not a cap on what one task may do but on how much herald does at
	// once: it may be raised above the default, within reason.
	v.limit("policy.limits.concurrent_runs", p.Limits.ConcurrentRuns, MaxConcurrentRuns)
	// Storage, not work: it may be raised above the default, within reason.
	v.limit("policy.limits.inbox_items", p.Limits.InboxItems, MaxInboxItems)
	if d := time.Duration(p.Limits.StartSpread); d < time.Second || d > MaxStartSpread {
		v.errf("policy.limits.start_spread", "must be between 1s and 1h")
	}
}

// limit checks a bound: configurable down from its default, never
// unbounded (I7).
func (v *validator) limit(path string, n, max int) {
	if n < 1 || n > max {
		v.errf(path, "must be between 1 and %d", max)
	}
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// target checks a notify or route entry: a literal address or the name of
// a configured recipient.
// targets checks the list of recipients at path.key, which must name one
// at least.
func (v *validator) targets(path, key string, list []string) {
	if len(list) == 0 {
		v.errf(path, "%s names no recipient", key)
	}
	for i, s := range list {
		v.target(fmt.Sprintf("%s.%s[%d]", path, key, i), s)
	}
}

func (v *validator) target(path, s string) {
	if v.unsetErr(path) {
		return
	}
	if delivery.IsLiteral(s) {
		if _, err := delivery.ParseAddress(s); err != nil {
			v.errf(path, "%v", err)
		}
		return
	}
	if _, ok := v.cfg.Recipients[s]; !ok {
		v.errf(path, "no recipient named %s%s", v.d.quote(path, s), didYouMean(s, slices.Collect(maps.Keys(v.cfg.Recipients))))
	}
}

func (v *validator) inbound() {
	for _, name := range slices.Sorted(maps.Keys(v.cfg.Inbound)) {
		h := v.cfg.Inbound[name]
		hp := "inbound." + name
		if !namePattern.MatchString(name) {
			v.errf(hp, "hook names use letters, digits, '.', '_' and '-'")
		}
		standard := true
		switch h.Format {
		case InboundFormatStandard:
		case InboundFormatGitHub:
			standard = false
		default:
			standard = false
			v.errf(hp+".format", "unknown format %s (want standard or github)", v.d.quote(hp+".format", h.Format))
		}
		hasSecret := false
		check := func(path, s string) {
			if v.unsetErr(path) {
				hasSecret = true // reported as unset
				return
			}
			if s == "" {
				return
			}
			hasSecret = true
			if p := section.WhsecProblem(s); standard && p != "" {
				v.errf(path, "%s", p)
			}
		}
		check(hp+".secret", h.Secret)
		for i, s := range h.Secrets {
			check(fmt.Sprintf("%s.secrets[%d]", hp, i), s)
		}
		if !hasSecret {
			v.errf(hp, "a secret is required")
		}
		v.targets(hp, "route", h.Route)
		if h.Template != "" {
			if _, err := template.New(name).Option("missingkey=zero").Parse(h.Template); err != nil {
				v.errf(hp+".template", "invalid template: %s", templateMsg(err))
			}
		}
	}
}

// templateMsg drops text/template's "template: name:" prefix.
func templateMsg(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

var taskIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (v *validator) tasks() {
	seen := map[string]int{}
	for i, t := range v.cfg.Tasks {
		tp := fmt.Sprintf("tasks[%d]", i)
		switch {
		case t.ID == "":
			v.errf(tp, "id is required")
		case !taskIDPattern.MatchString(t.ID):
			v.errf(tp+".id", "task ids are 1-64 letters, digits, '.', '_' and '-'")
		default:
			if at, dup := seen[t.ID]; dup {
				v.errf(tp+".id", "duplicate task id %q (first at line %d)", t.ID, at)
			} else {
				seen[t.ID] = v.line(tp + ".id")
			}
		}
		v.source(tp+".source", t)
		sp := tp + ".schedule"
		switch {
		case v.unsetErr(sp):
		case t.Schedule == "":
			v.errf(tp, "schedule is required (%s)", schedule.Usage)
		default:
			if err := parseSchedule(t.Schedule, v.cfg.Location); err != nil {
				v.errf(sp, "%v", err)
			}
		}
		for j, d := range t.RemindBefore {
			if rp := fmt.Sprintf("%s.remind_before[%d]", tp, j); d <= 0 && !v.d.bad[rp] {
				v.errf(rp, "must be a positive duration")
			}
		}
		v.targets(tp, "notify", t.Notify)
		if t.Owner != "" {
			op := tp + ".owner"
			if !v.unsetErr(op) && !validPrincipal(t.Owner, false) {
				v.errf(op, "malformed principal %s (want %s)", v.d.quote(op, t.Owner), address.Forms())
			}
		}
	}
}

func (v *validator) source(sp string, t TaskDecl) {
	s := t.Source
	if _, ok := v.d.lines[sp]; !ok {
		v.errf(sp, "source is required")
		return
	}
	if !source.Valid(s.Kind) {
		v.errf(sp+".kind", "unknown kind %s (want %s)", v.d.quote(sp+".kind", s.Kind), source.List("", "", ", ", " or "))
	}
	if s.Kind == source.KindRSSHub {
		v.rsshubSource(sp, s)
		return
	}
	up := sp + ".url"
	switch {
	case v.unsetErr(up):
	case s.URL == "":
		v.errf(sp, "url is required")
	default:
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			v.errf(up, "want an http or https URL")
		}
	}
	v.download(sp, s)
	if source.NeedsSelector(s.Kind) && s.Selector == "" {
		v.errf(sp, "selector is required for kind %s", s.Kind)
	}
	for k := range s.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			v.errf(sp+".headers", "malformed header name")
		}
	}
	v.signIn(sp, s)
}

// signIn checks a source's auth and render (docs/sources.md, Sources
// behind a login or JavaScript). Values are secrets: never quoted.
func (v *validator) signIn(sp string, s watch.Spec) {
	switch s.Render {
	case "":
	case watch.RenderBrowser:
		if s.Kind != "" && s.Kind != source.KindHTML {
			v.errf(sp+".render", "only html pages are rendered in a browser, not kind %s", s.Kind)
		} else if _, err := findBrowser(v.cfg.Browser.Path); err != nil {
			// Never read without rendering: refused here, with the reason.
			v.errf(sp+".render", "render: browser needs Chromium: %v", err)
		}
	default:
		v.errf(sp+".render", "render must be %q or left out", watch.RenderBrowser)
	}
	a := s.Auth
	if a == nil {
		return
	}
	ap := sp + ".auth"
	switch {
	case a.Cookie == "" && a.Login == nil && !v.unsetErr(ap+".cookie"):
		v.errf(ap, "auth needs a cookie or a login")
	case a.Cookie != "" && a.Login != nil:
		v.errf(ap, "auth takes a cookie or a login, not both")
	case strings.ContainsAny(a.Cookie, "\r\n"):
		v.errf(ap+".cookie", "the cookie holds a line break")
	}
	if l := a.Login; l != nil {
		lp := ap + ".login"
		u, err := url.Parse(l.URL)
		if !v.unsetErr(lp+".url") && (l.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "") {
			v.errf(lp+".url", "want the http or https address of the sign-in page")
		}
		if len(l.Form) == 0 {
			v.errf(lp+".form", "form names the fields to fill in, such as username and password")
		}
	}
}

// findBrowser finds the browser render: browser runs (tests replace it).
var findBrowser = browser.Find

func (v *validator) browser() {
	b := v.cfg.Browser
	if b.MaxParallel < 0 || b.MaxParallel > MaxBrowserParallel {
		v.errf("browser.max_parallel", "must be between 1 and %d", MaxBrowserParallel)
	}
	if b.Timeout < 0 || b.Timeout.D() > MaxBrowserTimeout {
		v.errf("browser.timeout", "must be a positive duration of at most %s", MaxBrowserTimeout)
	}
	if b.MemoryMB != 0 && b.MemoryMB < MinBrowserMemoryMB {
		v.errf("browser.memory_mb", "must be at least %d", MinBrowserMemoryMB)
	}
}

// notices checks how recipients and tasks lay out their notices (SPEC
// §20): each recipient's format, and every template parsed, a bad one
// named at its own line in the file.
func (v *validator) notices() {
	for _, name := range slices.Sorted(maps.Keys(v.cfg.Recipients)) {
		r, rp := v.cfg.Recipients[name], "recipients."+name
		if !delivery.ValidFormat(r.Format) {
			v.errf(rp+".format", "unknown format %s (want %s)", v.d.quote(rp+".format", r.Format), strings.Join(delivery.Formats, ", "))
		}
		v.template(rp+".template", r.Template)
	}
	for i, t := range v.cfg.Tasks {
		v.template(fmt.Sprintf("tasks[%d].template", i), t.Template)
	}
}

// templateLine finds the template's own line in a parse error
// ("notice:3: …" or "notice:3:7: …").
var templateLine = regexp.MustCompile(`^notice:(\d+):(?:\d+:)?\s*`)

// template parses the notice template at path; a bad one is reported at
// the file line its error is on (a block scalar's lines follow its key).
func (v *validator) template(path, src string) {
	if src == "" || v.unsetErr(path) {
		return
	}
	_, err := delivery.ParseTemplate(src)
	if err == nil {
		return
	}
	line, msg := v.line(path), err.Error()
	if m := templateLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if strings.Contains(src, "\n") {
			line += n
		}
	}
	v.ps.add(v.d.file, line, "%s: bad template: %s", where(path), msg)
}
