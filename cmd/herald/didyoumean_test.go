package main

import (
	"strings"
	"testing"
)

// TestCheckConfig_DidYouMeanForMisspeltKeysRecipientsAndZones: check-config
// names, beside each misspelt config key, recipient name and zone, the
// one the person most likely meant, with its file and line.
func TestCheckConfig_DidYouMeanForMisspeltKeysRecipientsAndZones(t *testing.T) {
	cfg := adjustExample(t, freeAddr(t), map[string]string{
		"timezone: UTC":   "timezone: Asia/Shangai",
		"  requesters: [": "  requestors: [",
		"recipients:\n":   "recipients:\n  ops-chat:\n    address: \"telegram:chat:-1001234567890\"\n",
		"tasks: []":       "tasks:\n  - id: news\n    source: {kind: rss, url: \"https://example.org/feed.xml\"}\n    schedule: every 30m\n    notify: [ops-caht]\n",
	})
	path := writeConfig(t, cfg)
	_, errOut, code := run(t, "check-config", "--config", path)
	if code != exitFailure {
		t.Fatalf("check-config exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		`unknown key "requestors" in policy (did you mean "requesters"?)`,
		`no recipient named "ops-caht" (did you mean "ops-chat"?)`,
		`unknown time zone "Asia/Shangai" (did you mean Asia/Shanghai?)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check-config lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(errOut, path+":") {
		t.Errorf("the problems do not name file:line:\n%s", errOut)
	}
}
