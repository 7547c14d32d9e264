package feishu

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/egress/proxytest"
)

// TestWebsocketMode_LongConnectionThroughTheRoute: with LongConn set, the
// SDK's endpoint request and its websocket both go through the route's
// SOCKS5 proxy, to names that resolve only inside it; the channel connects
// and answers an event pushed over the long connection.
func TestWebsocketMode_LongConnectionThroughTheRoute(t *testing.T) {
	if raceEnabled {
		t.Skip("the SDK's websocket client has a data race of its own; this test runs without -race in make test")
	}
	front := newFrontier(t)
	r := newTestChannel(t, false, func(o *Options) { o.Mode = ModeWebsocket; o.VerificationToken = "" })
	hosts := map[string]string{
		"open.feishu.test:80":     r.fake.srv.Listener.Addr().String(),
		"frontier.feishu.test:80": front.srv.Listener.Addr().String(),
	}
	proxy := proxytest.NewSOCKS5(t, hosts, "herald", "long-conn-pa55")
	gfw, err := egress.NewRoute("gfw", proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) { return nil, net.UnknownNetworkError("none") }}
	eo := egress.Options{Route: gfw, AnyAddress: true, Resolver: noDNS}
	// The SDK reads the process's defaults; put them back afterwards.
	oldTransport, oldDialer := http.DefaultClient.Transport, websocket.DefaultDialer
	t.Cleanup(func() { http.DefaultClient.Transport, websocket.DefaultDialer = oldTransport, oldDialer })

	u, _ := url.Parse(front.url())
	u.Host = "frontier.feishu.test"
	r.fake.mu.Lock()
	r.fake.wsURL = u.String()
	r.fake.mu.Unlock()
	r.ch.o.BaseURL = "http://open.feishu.test"
	r.ch.o.LongConn = &LongConn{Transport: egress.Transport(eo), Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
		c, _, err := egress.Dial(ctx, eo, &url.URL{Scheme: "wss", Host: addr})
		return c, err
	}}
	r.h.answer = func(conversation.Message) []conversation.Reply { return []conversation.Reply{{Text: "pong"}} }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.ch.Run(ctx) }()
	front.accept()
	waitFor(t, "connected status", func() bool { return r.ch.Status() == "on (websocket)" })
	if a := front.push(t, "m-1", messageEvent("", "ev-route-1", "om_route_1", chatP2P, "p2p", "/help")); a.StatusCode != http.StatusOK {
		t.Fatalf("answer %d", a.StatusCode)
	}
	for _, want := range []string{"open.feishu.test:80", "frontier.feishu.test:80"} {
		found := false
		for _, got := range proxy.Targets() {
			found = found || got == want
		}
		if !found {
			t.Fatalf("the proxy never carried %s: %v", want, proxy.Targets())
		}
	}
	cancel()
	<-done
}
