package bark

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
)

// keyPattern is what a device key looks like.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{4,128}$`)

// Config is a Bark device (recipients.<name>.bark). The URL is the one
// the Bark app shows: https://api.day.app/<device key>, or a self-hosted
// bark-server's https://bark.example.com/<device key>. The key is a
// secret, and with it the URL.
type Config struct {
	URL string `yaml:"url"`
	// Group groups the notices on the phone (unset: by task).
	Group string `yaml:"group"`

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return Kind }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) {
	ck.RequiredURL("url", c.URL)
	if c.URL != "" && !ck.Unset("url") && !ck.Bad("url") {
		if _, _, err := splitKey(c.URL); err != nil {
			ck.Errorf("url", "must end in the device key: https://api.day.app/<key>, as the Bark app shows it")
		}
	}
}

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	return New(Target{URL: c.URL, Group: c.Group}, WithEgress(deps.Egress), WithLogger(deps.Log))
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return secrets(c.URL) }

// secrets lists what must never be shown: the URL and the key on its own.
func secrets(raw string) []string {
	out := []string{raw}
	if _, key, err := splitKey(raw); err == nil {
		out = append(out, key)
	}
	return out
}

// splitKey splits a device URL into the server's push endpoint (where
// the key goes in the JSON body, not in the path) and the device key.
func splitKey(raw string) (push, key string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", ErrBadURL
	}
	dir, key := "", strings.TrimSuffix(u.Path, "/")
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		dir, key = key[:i], key[i+1:]
	}
	if !keyPattern.MatchString(key) || key == "push" {
		return "", "", ErrBadURL
	}
	u.Path, u.RawPath = dir+"/push", ""
	return u.String(), key, nil
}

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
