package onebot

import (
	"strconv"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Config is a QQ group or user reached through a OneBot v11 HTTP API
// (recipients.<name>.onebot). The access token is a secret; the group and
// user ids are recipient addresses, never logged.
type Config struct {
	URL         string `yaml:"url"`          // the API's base URL: http://127.0.0.1:3000
	AccessToken string `yaml:"access_token"` // sent as Authorization: Bearer <token>
	GroupID     int    `yaml:"group_id"`
	UserID      int    `yaml:"user_id"`

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return Kind }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) {
	ck.RequiredURL("url", c.URL)
	ck.Unset("access_token")
	switch {
	case ck.Bad("group_id") || ck.Bad("user_id"):
	case (c.GroupID != 0) == (c.UserID != 0):
		ck.Errorf("", "set exactly one of group_id and user_id")
	case c.GroupID < 0:
		ck.Errorf("group_id", "must be a positive QQ group number")
	case c.UserID < 0:
		ck.Errorf("user_id", "must be a positive QQ number")
	}
}

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	opts := []Option{WithEgress(deps.Egress), WithRobot(robot.WithLogger(deps.Log))}
	if deps.Store != nil {
		opts = append(opts, WithRobot(robot.WithBuckets(deps.Store.Buckets())))
	}
	return New(c.URL, c.AccessToken, Target{GroupID: int64(c.GroupID), UserID: int64(c.UserID)}, opts...)
}

// Secrets implements delivery.SinkConfig: the token, and the ids, which
// are recipient addresses.
func (c *Config) Secrets() []string {
	out := []string{c.AccessToken}
	for _, id := range []int{c.GroupID, c.UserID} {
		if id != 0 {
			out = append(out, strconv.Itoa(id))
		}
	}
	return out
}

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
