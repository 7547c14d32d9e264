package ntfy

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
)

// topicPattern is what ntfy accepts as a topic name.
var topicPattern = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// Config is an ntfy topic (recipients.<name>.ntfy). The URL names the
// server and the topic: https://ntfy.sh/<topic>, or a self-hosted
// server's https://ntfy.example.com/<topic>. On a public server the
// topic is the only thing keeping the notices private, so the URL is
// treated as a secret, like the token and the password.
type Config struct {
	URL string `yaml:"url"`
	// Token is an access token (tk_…), sent as a Bearer credential.
	Token string `yaml:"token"`
	// Username and Password are sent as Basic credentials instead.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// Priority is ntfy's 1 (min) to 5 (max); unset is the server's
	// default (3).
	Priority int `yaml:"priority"`
	// Tags are ntfy tags (emoji short codes among them) on every notice.
	Tags []string `yaml:"tags"`

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
		if _, _, err := splitTopic(c.URL); err != nil {
			ck.Errorf("url", "must name the topic: https://ntfy.sh/<topic>, the topic of letters, digits, '-' and '_' (at most 64)")
		}
	}
	if c.Token != "" && (c.Username != "" || c.Password != "") {
		ck.Errorf("token", "set either token or username and password, not both")
	}
	if (c.Username == "") != (c.Password == "") && !ck.Unset("username") && !ck.Unset("password") {
		ck.Errorf("username", "username and password go together")
	}
	if !ck.Bad("priority") && (c.Priority < 0 || c.Priority > 5) {
		ck.Errorf("priority", "must be 1 (min) to 5 (max); unset is the server's default")
	}
	for _, t := range c.Tags {
		if strings.TrimSpace(t) == "" || strings.Contains(t, ",") {
			ck.Errorf("tags", "tags are non-empty words without commas")
			break
		}
	}
}

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	opts := []Option{WithEgress(deps.Egress), WithLogger(deps.Log)}
	if deps.Store != nil {
		opts = append(opts, WithBuckets(deps.Store.Buckets()))
	}
	return New(Target{URL: c.URL, Token: c.Token, Username: c.Username, Password: c.Password, Priority: c.Priority, Tags: c.Tags}, opts...)
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return secrets(c.URL, c.Token, c.Password) }

// secrets lists what must never be shown: the topic URL (its path is
// the topic), the token and the password.
func secrets(topicURL, token, password string) []string {
	out := []string{topicURL}
	if _, topic, err := splitTopic(topicURL); err == nil && len(topic) >= 6 {
		out = append(out, topic)
	}
	for _, s := range []string{token, password} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// splitTopic splits a topic URL into the server's publish URL (where a
// JSON message is POSTed: the topic URL without the topic) and the topic.
func splitTopic(raw string) (base, topic string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", ErrBadURL
	}
	dir, topic := "", strings.TrimSuffix(u.Path, "/")
	if i := strings.LastIndexByte(topic, '/'); i >= 0 {
		dir, topic = topic[:i], topic[i+1:]
	}
	if !topicPattern.MatchString(topic) {
		return "", "", ErrBadURL
	}
	u.Path, u.RawPath = dir+"/", ""
	return u.String(), topic, nil
}

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
