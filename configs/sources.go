package configs

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Sources holds settings for source kinds that read through a service
// (SPEC §18).
type Sources struct {
	RSSHub RSSHub `yaml:"rsshub"`
}

// RSSHub lists the RSSHub instances rsshub watches ask, in order: a run
// stays on the first that answers and moves on after a 5xx, 429, timeout
// or connection failure (docs/sources.md, RSSHub routes).
type RSSHub struct {
	Instances []RSSHubInstance `yaml:"instances"`
}

// RSSHubInstance is one instance: its base URL and, for a deployment with
// ACCESS_KEY set, the key (a secret, sent as ?key=).
type RSSHubInstance struct {
	URL string `yaml:"url"`
	Key string `yaml:"key"`
}

// rsshub checks sources.rsshub.instances: absolute http(s) base URLs
// without credentials, query or fragment, each once.
func (v *validator) rsshub() {
	seen := map[string]int{}
	for i, in := range v.cfg.Sources.RSSHub.Instances {
		p := fmt.Sprintf("sources.rsshub.instances[%d]", i)
		v.unsetErr(p + ".key")
		up := p + ".url"
		if v.unsetErr(up) {
			continue
		}
		u, err := url.Parse(in.URL)
		switch {
		case in.URL == "":
			v.errf(p, "url is required")
			continue
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "":
			v.errf(up, "want an http or https URL")
			continue
		case u.User != nil:
			v.errf(up, "credentials in the URL; give an access key as key")
			continue
		case u.RawQuery != "" || u.Fragment != "":
			v.errf(up, "want the instance's base URL, without a query or fragment (an access key goes in key)")
			continue
		}
		if first, dup := seen[u.String()]; dup {
			v.errf(up, "the same instance as sources.rsshub.instances[%d]", first)
		}
		seen[u.String()] = i
	}
}

// rsshubSource checks an rsshub task's source: a route, no url (the
// instances give it), and an instance to ask.
func (v *validator) rsshubSource(sp string, s watch.Spec) {
	rp := sp + ".route"
	switch {
	case v.unsetErr(rp):
	case s.Route == "":
		v.errf(sp, "route is required for kind rsshub (as /ustc/jwc/info)")
	default:
		if _, err := source.CleanRoute(s.Route); err != nil {
			v.errf(rp, "%s", strings.TrimPrefix(err.Error(), source.ErrInvalidSpec.Error()+": "))
		}
	}
	if s.URL != "" {
		v.errf(sp+".url", "an rsshub source has a route, not a url: the instances in sources.rsshub.instances give the address")
	}
	if len(v.cfg.Sources.RSSHub.Instances) == 0 {
		v.errf(sp+".kind", "kind rsshub needs an instance in sources.rsshub.instances")
	}
}

// Trusted are the exact addresses of instances named by a loopback or
// literal IP address (a self-hosted RSSHub at 127.0.0.1:1200): the admin
// named them, so rsshub watches reach them whatever
// policy.allow_private_networks says, and nothing else opens. Instances
// named by a host name are resolved by serve when a check starts.
func (r RSSHub) Trusted() []netip.AddrPort {
	var out []netip.AddrPort
	for _, in := range r.Instances {
		out = append(out, Assistant{Endpoint: in.URL}.TrustedEndpoint()...)
	}
	return out
}
