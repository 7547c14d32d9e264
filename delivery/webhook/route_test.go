package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/egress/proxytest"
)

// A webhook recipient on a route is pushed to through its HTTP proxy
// (CONNECT to a name only the proxy knows, private networks not allowed).
// A proxy that refuses herald's credentials holds the push (nothing was
// sent) with the reason proxy_auth; a proxy that is down, proxy_connect.
func TestRoute_WebhookThroughItsProxy(t *testing.T) {
	got := 0
	srv, cert := proxytest.NewTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got++
		w.WriteHeader(http.StatusNoContent)
	}), "hooks.ops.test")
	const pw = "ops-proxy-pa55"
	hosts := map[string]string{"hooks.ops.test:443": strings.TrimPrefix(srv.URL, "https://")}
	proxy := proxytest.NewHTTP(t, hosts, "herald", pw)
	down := proxytest.NewHTTP(t, hosts, "", "")
	downURL := down.URL()
	down.Close()
	for _, tc := range []struct {
		name, proxy string
		want        delivery.Outcome
	}{
		{"through the proxy", proxy.URL(), delivery.Outcome{Result: delivery.Completed}},
		{"wrong password", proxy.URLWith("herald", "not-"+pw), delivery.Outcome{Result: delivery.RetryAfter, After: delivery.ProxyWait, Reason: delivery.ReasonProxyAuth}},
		{"proxy down", downURL, delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: delivery.ReasonProxy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route, err := egress.NewRoute("campus", tc.proxy)
			if err != nil {
				t.Fatal(err)
			}
			s, err := New("ops", "https://hooks.ops.test/herald", testSecret, true, egress.Options{Route: route, RootCAs: cert.Pool})
			if err != nil {
				t.Fatal(err)
			}
			out := s.Send(context.Background(), testDelivery())
			if out.Result != tc.want.Result || out.Reason != tc.want.Reason || out.After != tc.want.After {
				t.Fatalf("outcome %+v, want %+v", out, tc.want)
			}
		})
	}
	if got != 1 {
		t.Fatalf("the recipient got %d pushes, want 1", got)
	}
}
