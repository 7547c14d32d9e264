package configs

// The chat channels' and the assistant's sections: credentials, modes and
// endpoints.

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// credential is one field a channel cannot run without.
type credential struct {
	key, value string
}

// chatChannel is what channels() checks alike in every chat channel's
// section: a mode out of two, credentials always needed and more needed
// only in webhook mode, keys that mean nothing outside webhook mode, and an
// API base URL.
type chatChannel struct {
	name        string
	mode        string
	modes       [2]string // the modes there are; modes[1] is webhook mode
	enabled     *bool
	need        []credential
	webhookNeed []credential
	webhookOnly []string
	urlKey, url string
	// webhook, when set, checks more of an enabled channel in webhook mode.
	webhook func()
}

// channels switches off an enabled channel whose credentials are empty
// (with a warning), and checks the rest of an enabled one.
func (v *validator) channels() {
	t := &v.cfg.Channels.Telegram
	v.chatChannel(chatChannel{
		name:        "telegram",
		mode:        t.Mode,
		modes:       [2]string{TelegramModePolling, TelegramModeWebhook},
		enabled:     &t.Enabled,
		need:        []credential{{"token", t.Token}},
		webhookNeed: []credential{{"webhook_secret", t.WebhookSecret}},
		webhookOnly: []string{"webhook_secret"},
		urlKey:      "api_url",
		url:         t.APIURL,
		webhook: func() {
			if !validTelegramSecret(t.WebhookSecret) {
				v.errf("channels.telegram.webhook_secret", "must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
			}
		},
	})
	f := &v.cfg.Channels.Feishu
	v.chatChannel(chatChannel{
		name:        "feishu",
		mode:        f.Mode,
		modes:       [2]string{FeishuModeWebsocket, FeishuModeWebhook},
		enabled:     &f.Enabled,
		need:        []credential{{"app_id", f.AppID}, {"app_secret", f.AppSecret}},
		webhookNeed: []credential{{"verification_token", f.VerificationToken}},
		webhookOnly: []string{"verification_token", "encrypt_key"},
		urlKey:      "base_url",
		url:         f.BaseURL,
	})
}

func (v *validator) chatChannel(c chatChannel) {
	prefix := "channels." + c.name
	webhook := c.mode == c.modes[1]
	if c.mode != c.modes[0] && !webhook {
		v.errf(prefix+".mode", "unknown mode %s (want %s or %s)", v.d.quote(prefix+".mode", c.mode), c.modes[0], c.modes[1])
	}
	if !webhook {
		for _, key := range c.webhookOnly {
			v.skip(prefix + "." + key)
		}
	}
	if *c.enabled {
		need := c.need
		if webhook {
			need = append(need[:len(need):len(need)], c.webhookNeed...)
		}
		if v.switchOff(c.name, need) {
			*c.enabled = false
		}
	}
	if !*c.enabled {
		v.skip(prefix)
		return
	}
	v.httpsURL(prefix+"."+c.urlKey, c.url, false)
	if webhook {
		if c.webhook != nil {
			c.webhook()
		}
		v.needPublicURL(prefix + ".mode")
	}
}

// assistant switches the assistant on when its section names both an
// endpoint and a key, off with a warning when the section is there but one
// is empty, and checks the rest when it is on. The endpoint is an outbound
// URL like any other: https, plain http only for loopback hosts with
// policy.allow_private_networks.
func (v *validator) assistant() {
	a := &v.cfg.Assistant
	if _, present := v.d.lines["assistant"]; !present {
		v.skip("assistant")
		return
	}
	if t := a.Timeout.D(); !v.d.bad["assistant.timeout"] && (t <= 0 || t > MaxAssistantTime) {
		v.errf("assistant.timeout", "must be a positive duration of at most %s", MaxAssistantTime)
	}
	if n := a.MaxPerHour; n < 1 || n > MaxAssistantRate {
		v.errf("assistant.max_per_hour", "must be between 1 and %d", MaxAssistantRate)
	}
	a.Enabled = !v.switchOffFeature("assistant", "assistant off", []credential{{"endpoint", a.Endpoint}, {"api_key", a.APIKey}})
	if !a.Enabled {
		v.skip("assistant")
		return
	}
	if a.Local {
		v.localEndpoint("assistant.endpoint", a.Endpoint)
	} else {
		v.httpsURL("assistant.endpoint", a.Endpoint, false)
	}
	if a.Model == "" && !v.unsetErr("assistant.model") {
		v.errf("assistant", "model is required")
	}
}

// localEndpoint checks the URL of a local model server (assistant.local):
// http or https, named by an IP address or localhost, so that exactly that
// destination can be trusted whatever a name might resolve to.
func (v *validator) localEndpoint(path, raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
		v.errf(path, "not a valid http(s) URL")
		return
	}
	if _, err := netip.ParseAddr(u.Hostname()); err != nil && !strings.EqualFold(u.Hostname(), "localhost") {
		v.errf(path, "with local: true, name the model server by IP address or localhost, not %s", v.d.quote(path, u.Hostname()))
		return
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			v.errf(path, "port %s is not valid", v.d.quote(path, p))
		}
	}
}

// switchOff reports whether an enabled channel lacks credentials, adding
// the warning serve logs.
func (v *validator) switchOff(channel string, need []credential) bool {
	return v.switchOffFeature(channel, "channel off", need)
}

// switchOffFeature reports whether a feature lacks one of need, adding
// the warning "name: key not set; off" serve logs.
func (v *validator) switchOffFeature(name, off string, need []credential) bool {
	var missing []string
	for _, c := range need {
		if c.value == "" {
			missing = append(missing, c.key)
		}
	}
	if len(missing) == 0 {
		return false
	}
	v.cfg.Warnings = append(v.cfg.Warnings, fmt.Sprintf("%s: %s not set; %s", name, strings.Join(missing, " and "), off))
	return true
}

func (v *validator) needPublicURL(path string) {
	if v.cfg.Server.PublicURL == "" {
		v.errf(path, "webhook mode needs server.public_url")
	}
}

func validTelegramSecret(s string) bool {
	if len(s) < 1 || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
