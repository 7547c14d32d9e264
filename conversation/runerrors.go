package conversation

import "regexp"

// The source's plain English explanations of a refused address
// (tasks/source), which a reply in another language words its own way
// (runerror.* in the catalogue).
var (
	reRefusedAddr = regexp.MustCompile(`^blocked_address: (\S+) (is|resolves to) (a loopback address|a private network address|a link-local address|not a public address|an address that is not public); set policy\.allow_private_networks for local sources$`)
	reRefusedPort = regexp.MustCompile(`^blocked_address: port (\d+) of (\S+) is not allowed`)
	addrWords     = map[string]string{
		"a loopback address": "runerror.loopback", "a private network address": "runerror.private", "a link-local address": "runerror.link_local",
		"not a public address": "runerror.not_public", "an address that is not public": "runerror.not_public",
	}
)

// runError is a run's error for the reply: redacted, and in the reply's
// language where herald knows the words.
func (t *turn) runError(s string) string {
	s = Redact(s)
	if t.lang == "en" {
		return s // the source's own words
	}
	if m := reRefusedAddr.FindStringSubmatch(s); m != nil {
		verb := "runerror.is"
		if m[2] == "resolves to" {
			verb = "runerror.resolves_to"
		}
		return t.tr("runerror.refused_address", m[1], t.tr(verb), t.tr(addrWords[m[3]]))
	}
	if m := reRefusedPort.FindStringSubmatch(s); m != nil {
		return t.tr("runerror.refused_port", m[1], m[2])
	}
	return s
}
