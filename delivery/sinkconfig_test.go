package delivery_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
)

// leakyConfig is a sink section whose constructor fails with an error
// quoting its URL and secret, as a careless library might.
type leakyConfig struct{ url, secret string }

func (leakyConfig) Kind() delivery.AddressKind { return "leaky" }
func (leakyConfig) Check(section.Checker)      {}
func (c leakyConfig) NewSink(delivery.SinkDeps) (delivery.Sink, error) {
	return nil, errors.New("cannot use " + c.url + " with secret " + c.secret + "; path " + strings.SplitN(c.url, "?", 2)[0][len("https://hooks.example.com"):])
}
func (c leakyConfig) Secrets() []string { return []string{c.url, c.secret} }

// TestI10_SinkConstructionErrorsNameNoSecret: an error building a sink
// keeps the hook's host but loses its path, query token and secret.
func TestI10_SinkConstructionErrorsNameNoSecret(t *testing.T) {
	cfg := leakyConfig{url: "https://hooks.example.com/robot/send?access_token=tok_8f2a91", secret: "SECa71be0"}
	_, err := delivery.BuildSink(cfg, delivery.SinkDeps{Name: "ops"})
	if err == nil {
		t.Fatal("want the constructor's error")
	}
	msg := err.Error()
	for _, leak := range []string{"tok_8f2a91", "SECa71be0", "/robot/send"} {
		if strings.Contains(msg, leak) {
			t.Errorf("error %q carries %q", msg, leak)
		}
	}
	if !strings.Contains(msg, "hooks.example.com") {
		t.Errorf("error %q lost the host, which is not secret", msg)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		msg     string
		secrets []string
		want    string
	}{
		{"post https://h.example/hook/abc: timeout", []string{"https://h.example/hook/abc"}, "post https://h.example/…: timeout"},
		{"query key=k1 refused", []string{"https://h.example/send?key=k1"}, "query … refused"},
		{"bad secret s3cr3t", []string{"", "s3cr3t"}, "bad secret …"},
		{"nothing to hide", []string{"https://h.example/"}, "nothing to hide"},
	} {
		if got := delivery.Redact(tc.msg, tc.secrets); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}
