package tasks

import (
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/egress"
)

// Policy is who may do what (docs/configuration.md, Principals and addresses).
type Policy struct {
	Admins       []string
	Requesters   []string // patterns: "telegram:*", "console:alice"
	AllowedHosts []string // "*.example.edu", "*"
	AllowPrivate bool
	AutoApprove  []AutoApprove
	Limits       Limits
	// Named lists the named recipients; only admins may target them from chat.
	Named map[string]bool
	// DownloadRoots are absolute directories an approval may bind as a
	// task's download dir; DownloadHosts the file-storage hosts downloads
	// may be redirected to (empty: download.DefaultHosts).
	DownloadRoots []string
	DownloadHosts []string
	// RSSHub are the base URLs of sources.rsshub.instances, in order: an
	// rsshub request's URL is its route on the first (SPEC §18).
	RSSHub []string
}

// AutoApprove approves requests from Principals for Hosts without an admin.
type AutoApprove struct {
	Principals []string
	Hosts      []string
}

// Limits are the I7 bounds.
type Limits struct {
	MaxTasks         int // live tasks in all, config-declared ones included
	MaxTasksPerOwner int // live chat tasks of one owner principal
	HistoryRuns      int
	MaxItemsPerRun   int
	Concurrency      int // runs at once, all sources
	// PerHostRuns and PerHostPerMinute cap the checks one source host
	// sees, across every task that reads it: at once, and started per
	// minute.
	PerHostRuns      int
	PerHostPerMinute int
}

func (l Limits) withDefaults() Limits {
	for _, d := range []struct {
		v   *int
		def int
	}{
		{&l.MaxTasks, 10000}, {&l.MaxTasksPerOwner, 50}, {&l.HistoryRuns, 30}, {&l.MaxItemsPerRun, 100},
		{&l.Concurrency, 4}, {&l.PerHostRuns, 4}, {&l.PerHostPerMinute, 600},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return l
}

// IsAdmin reports whether p is an admin. An agent never is, whatever a
// list says (docs/agents.md, Agents).
func (p Policy) IsAdmin(principal string) bool {
	return !address.IsAgent(principal) && slices.Contains(p.Admins, principal)
}

// MayRequest reports whether principal may request tasks.
func (p Policy) MayRequest(principal string) bool {
	if p.IsAdmin(principal) {
		return true
	}
	for _, pat := range p.Requesters {
		if matchPrincipal(pat, principal) {
			return true
		}
	}
	return false
}

func matchPrincipal(pat, principal string) bool { return address.Match(pat, principal) }

// HostAllowed reports whether any requester may watch host.
func (p Policy) HostAllowed(host string) bool { return matchHosts(p.AllowedHosts, host) }

func matchHosts(pats []string, host string) bool {
	host = strings.ToLower(host)
	for _, pat := range pats {
		pat = strings.ToLower(pat)
		switch {
		case pat == "*" || pat == host:
			return true
		case strings.HasPrefix(pat, "*."):
			if strings.HasSuffix(host, pat[1:]) {
				return true
			}
		}
	}
	return false
}

// autoApproved reports whether principal's request for host needs no admin.
func (p Policy) autoApproved(principal, host string) bool {
	for _, r := range p.AutoApprove {
		ok := false
		for _, pat := range r.Principals {
			if matchPrincipal(pat, principal) {
				ok = true
			}
		}
		if ok && matchHosts(r.Hosts, host) {
			return true
		}
	}
	return false
}

// grantFor builds the scope an approval binds for t.
func grantFor(t *Task, by, basis string) (*Grant, error) {
	u, err := url.Parse(t.Source.URL)
	if err != nil || u.Host == "" {
		return nil, userErr(ErrInvalid, "bad_url", "the URL %q is not valid", t.Source.URL)
	}
	prefix := path.Dir(u.Path)
	if u.Path == "" || strings.HasSuffix(u.Path, "/") {
		prefix = strings.TrimSuffix(u.Path, "/")
	}
	if prefix == "." {
		prefix = ""
	}
	ops := []string{"watch"}
	if len(t.RemindBefore) > 0 {
		ops = append(ops, "remind")
	}
	return &Grant{
		Owner: t.Owner, Operations: ops, Host: strings.ToLower(u.Host), PathPrefix: prefix,
		Recipients: slices.Clone(t.Notify), Dir: downloadDir(t), Basis: basis, By: by,
	}, nil
}

// checkScope verifies that t still lies inside its grant and that the
// current policy still permits it (I8). The error says why not, plainly.
func (p Policy) checkScope(t *Task) error {
	g := t.Grant
	if g == nil {
		return userErr(ErrScope, "no_approval", "task %s has no approval; it needs /approve %s", t.ID, t.Request.ID)
	}
	u, err := url.Parse(t.Source.URL)
	if err != nil {
		return userErr(ErrScope, "task_url_invalid", "the task's URL is not valid")
	}
	host := strings.ToLower(u.Host)
	if host != g.Host || !egress.PathWithin(g.PathPrefix, u) {
		return userErr(ErrScope, "outside_approval", "the URL on %s is outside what was approved (%s%s); it needs a new approval",
			host, g.Host, g.PathPrefix)
	}
	if t.Owner != g.Owner {
		return userErr(ErrScope, "owner_changed", "the task's owner changed since approval; it needs a new approval")
	}
	for _, r := range t.Notify {
		if !slices.Contains(g.Recipients, r) {
			return userErr(ErrScope, "recipient_added", "a recipient was added since approval; it needs a new approval")
		}
	}
	if err := p.checkDownloadScope(t); err != nil {
		return err
	}
	if g.Basis == "config" {
		return nil
	}
	if !p.MayRequest(t.Owner) {
		return userErr(ErrScope, "owner_may_not_request", "%s may no longer request tasks under the current policy", t.Owner)
	}
	switch g.Basis {
	case "allowed_hosts":
		if !p.HostAllowed(host) {
			return userErr(ErrScope, "host_not_allowed", "the host %s is no longer in the allowed list; an admin can approve it again with /approve %s",
				host, t.Request.ID)
		}
	case "auto_approve":
		if !p.autoApproved(t.Owner, host) && !p.HostAllowed(host) {
			return userErr(ErrScope, "host_not_auto_approved", "the host %s is no longer auto-approved for %s; an admin can approve it with /approve %s",
				host, t.Owner, t.Request.ID)
		}
	}
	for _, r := range t.Notify {
		if !delivery.IsLiteral(r) && !p.Named[r] {
			return userErr(ErrScope, "recipient_gone", "the recipient %s no longer exists", r)
		}
	}
	return nil
}

// mayTarget checks that a chat request targets only the requesting chat,
// the requester's inbox, or named recipients the policy lets it use (§3).
func (p Policy) mayTarget(s Submission, r string) error {
	switch {
	case r == s.ReplyTo && r != "":
		return nil
	case r == address.InboxOf(s.Principal):
		return nil
	case !delivery.IsLiteral(r):
		if !p.Named[r] {
			return userErr(ErrInvalid, "no_recipient", "there is no recipient named %s", r)
		}
		if !p.IsAdmin(s.Principal) {
			return userErr(ErrForbidden, "recipient_admin_only", "only an admin can send to %s", r)
		}
		return nil
	case p.IsAdmin(s.Principal):
		if _, err := delivery.ParseAddress(r); err != nil {
			return userErr(ErrInvalid, "bad_address", "%v", err)
		}
		return nil
	}
	return userErr(ErrForbidden, "recipient_not_yours", "you can only have pushes sent to this chat or your inbox")
}
