package assistant

import (
	"context"
	"errors"
	"net"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/assistant/assistanttest"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/egress/proxytest"
)

// noLookup resolves nothing: the name is one that does not resolve here.
var noLookup = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no lookups in this test")
}}

// TestInterpret_ThroughTheRoute: the model API is called through the
// assistant's route (SOCKS5 to a name only the proxy knows, private
// networks not allowed); the key is still sent only to the model.
func TestInterpret_ThroughTheRoute(t *testing.T) {
	m := assistanttest.New(t, testKey)
	m.Answer(assistanttest.JSON(map[string]any{"action": "explain", "text": "Use /watch."}))
	backend, _ := url.Parse(m.URL)
	front, cert := proxytest.NewTLSServer(t, httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend.Host}), "api.model.test")
	proxy := proxytest.NewSOCKS5(t, map[string]string{"api.model.test:443": strings.TrimPrefix(front.URL, "https://")}, "herald", "model-route-pw")
	gfw, err := egress.NewRoute("gfw", proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Endpoint: "https://api.model.test" + backend.Path, APIKey: testKey, Model: "small-model",
		Egress: egress.Options{Route: gfw, RootCAs: cert.Pool, Resolver: noLookup}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Interpret(context.Background(), conversation.Ask{Text: "how do I watch a feed?", Lang: "en", Zone: "UTC"})
	if err != nil || s.Action != conversation.SuggestExplain {
		t.Fatalf("suggestion %+v, %v", s, err)
	}
	if got := proxy.Targets(); len(got) != 1 || got[0] != "api.model.test:443" {
		t.Fatalf("the proxy carried %v", got)
	}
}
