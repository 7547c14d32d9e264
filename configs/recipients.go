package configs

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/bark"
	"github.com/herald-bridge/herald/delivery/dingtalkbot"
	"github.com/herald-bridge/herald/delivery/discord"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/email"
	"github.com/herald-bridge/herald/delivery/feishubot"
	"github.com/herald-bridge/herald/delivery/ntfy"
	"github.com/herald-bridge/herald/delivery/onebot"
	"github.com/herald-bridge/herald/delivery/pushplus"
	"github.com/herald-bridge/herald/delivery/serverchan"
	"github.com/herald-bridge/herald/delivery/slack"
	"github.com/herald-bridge/herald/delivery/webhook"
	"github.com/herald-bridge/herald/delivery/wecombot"
)

// Recipient is a named recipient: exactly one sink section or Address.
//
// Each sink section is a field whose type implements delivery.SinkConfig:
// the sink's package owns the section's keys, checks and constructor, and
// configs finds the fields by their type. Adding a sink is adding its
// field here; nothing else in configs names it.
type Recipient struct {
	FeishuBot   *feishubot.Config   `yaml:"feishu_bot"`
	Webhook     *webhook.Config     `yaml:"webhook"`
	WeComBot    *wecombot.Config    `yaml:"wecom_bot"`
	DingTalkBot *dingtalkbot.Config `yaml:"dingtalk_bot"`
	Email       *email.Config       `yaml:"email"`
	Slack       *slack.Config       `yaml:"slack"`
	Discord     *discord.Config     `yaml:"discord"`
	Ntfy        *ntfy.Config        `yaml:"ntfy"`
	Bark        *bark.Config        `yaml:"bark"`
	OneBot      *onebot.Config      `yaml:"onebot"`
	PushPlus    *pushplus.Config    `yaml:"pushplus"`
	ServerChan  *serverchan.Config  `yaml:"serverchan"`

	// Format (full, title or link) and Template lay out the recipient's
	// notices (SPEC §20); its template wins over a task's.
	Format   string `yaml:"format"`
	Template string `yaml:"template"`

	Address  string `yaml:"address"`
	Language string `yaml:"language"`
	Timezone string `yaml:"timezone"`

	// Digest is a schedule (daily 20:00 [Zone], or any other form): the
	// recipient's change notices are held and sent as one message at each
	// fire. DigestMaxItems bounds the items one lists (default 50).
	Digest         string `yaml:"digest"`
	DigestMaxItems int    `yaml:"digest_max_items"`
	// Translate (zh or en) asks the assistant for a translation of each
	// notice into that language.
	Translate string `yaml:"translate"`
}

// The sink sections under their configs names.
type (
	FeishuBot = feishubot.Config
	Webhook   = webhook.Config
)

// SinkSection is one sink section set in a recipient.
type SinkSection struct {
	Key    string // its YAML key: feishu_bot, webhook, …
	Config delivery.SinkConfig
}

// sinkField is a field of Recipient holding a sink section.
type sinkField struct {
	key   string
	index int
}

// sinkFields are Recipient's sink sections, in field order.
var sinkFields = func() []sinkField {
	want := reflect.TypeFor[delivery.SinkConfig]()
	t := reflect.TypeFor[Recipient]()
	var out []sinkField
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Type.Kind() == reflect.Pointer && f.Type.Implements(want) {
			out = append(out, sinkField{key: fieldName(f), index: i})
		}
	}
	return out
}()

// SinkKeys are the YAML keys of the sink sections a recipient may set.
func SinkKeys() []string {
	keys := make([]string, len(sinkFields))
	for i, f := range sinkFields {
		keys[i] = f.key
	}
	return keys
}

// Sinks returns the sink sections set in r (valid config: at most one).
func (r Recipient) Sinks() []SinkSection {
	v := reflect.ValueOf(r)
	var out []SinkSection
	for _, f := range sinkFields {
		if fv := v.Field(f.index); !fv.IsNil() {
			out = append(out, SinkSection{Key: f.key, Config: fv.Interface().(delivery.SinkConfig)})
		}
	}
	return out
}

// Sink returns r's sink section, or nil when r is an address.
func (r Recipient) Sink() delivery.SinkConfig {
	if s := r.Sinks(); len(s) > 0 {
		return s[0].Config
	}
	return nil
}

// recipientChoice is what a recipient sets exactly one of, in words.
var recipientChoice = func() string {
	keys := append(SinkKeys(), "address")
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
}()

func (v *validator) recipients() {
	if v.cfg.SMTP != nil {
		v.cfg.SMTP.Check(sectionChecker{v: v, path: email.SectionKey})
	}
	for _, name := range slices.Sorted(maps.Keys(v.cfg.Recipients)) {
		r := v.cfg.Recipients[name]
		rp := "recipients." + name
		if !namePattern.MatchString(name) || delivery.IsLiteral(name) {
			v.errf(rp, "recipient names use letters, digits, '.', '_' and '-' and must not look like an address")
		}
		sinks := r.Sinks()
		ap := rp + ".address"
		address := r.Address != "" || v.d.lines[ap] != 0
		if n := len(sinks); (address && n != 0) || (!address && n != 1) {
			v.errf(rp, "set exactly one of %s", recipientChoice)
		}
		for _, s := range sinks {
			s.Config.Check(sectionChecker{v: v, path: rp + "." + s.Key})
		}
		if r.Email != nil && v.cfg.SMTP == nil {
			v.errf(rp+".email", "needs the top-level %s section (the server to send through)", email.SectionKey)
		}
		if address {
			switch {
			case v.unsetErr(ap):
			case r.Address == "":
				v.errf(ap, "is empty")
			default:
				if _, err := delivery.ParseAddress(r.Address); err != nil {
					v.errf(ap, "%v", err)
				}
			}
		}
		v.language(rp+".language", r.Language)
		if _, err := loadZone(r.Timezone); err != nil {
			v.errf(rp+".timezone", "%v", err)
		}
	}
}

// sectionChecker is the validator as seen by a section another package
// owns: keys relative to the section's path.
type sectionChecker struct {
	v    *validator
	path string
}

func (c sectionChecker) at(key string) string {
	if key == "" {
		return c.path
	}
	return c.path + "." + key
}

func (c sectionChecker) Errorf(key, format string, args ...any) {
	c.v.errf(c.at(key), format, args...)
}

func (c sectionChecker) Unset(key string) bool { return c.v.unsetErr(c.at(key)) }

func (c sectionChecker) Bad(key string) bool { return c.v.d.bad[c.at(key)] }

func (c sectionChecker) Quote(key, s string) string { return c.v.d.quote(c.at(key), s) }

func (c sectionChecker) RequiredURL(key, raw string) {
	if raw == "" && len(c.v.d.unset[c.at(key)]) == 0 {
		c.v.errf(c.path, "%s is required", key)
		return
	}
	if c.v.httpsURL(c.at(key), raw, false) {
		c.v.outbound(c.at(key), raw)
	}
}

// outbound refuses a recipient URL that the sink would refuse when built
// (egress.CheckURL under policy.allow_private_networks: a loopback,
// private or unspecified address, a port other than 80 and 443): the
// same function decides for check-config and for serve, so check-config
// never says ok where serve refuses. The URL itself is never printed.
func (v *validator) outbound(path, raw string) {
	err := egress.CheckURL(raw, v.cfg.Policy.AllowPrivateNetworks)
	if err == nil {
		return
	}
	var be *egress.BlockedError
	switch {
	case errors.As(err, &be) && be.Kind == egress.KindPort:
		v.errf(path, "port %d is refused for outbound requests (only 80 and 443 unless policy.allow_private_networks: true)", be.Port)
	case errors.As(err, &be) && be.Kind == egress.KindMetadata:
		v.errf(path, "a cloud metadata address is refused for outbound requests, whatever policy.allow_private_networks says")
	case errors.As(err, &be):
		v.errf(path, "a %s address is refused for outbound requests (set policy.allow_private_networks: true for a local recipient)", be.Kind)
	default:
		v.errf(path, "%v", err)
	}
}
