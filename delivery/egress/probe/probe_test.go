package probe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/egress/proxytest"
)

var noDNS = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no lookups in this test")
}}

func head(target string) func(ctx context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodHead, target, nil)
	}
}

// Each way a check can end has its one word, and the detail carries no
// secret and no address.
func TestRun_ClassifiesEachOutcome(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/get-only" && r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		_, _ = w.Write([]byte(`{"code":99991663,"msg":"app secret invalid"}`))
	}))
	defer ok.Close()
	tlsSrv, _ := proxytest.NewTLSServer(t, http.NotFoundHandler(), "other.test")
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	private := egress.Options{AllowPrivate: true, Resolver: noDNS}
	for _, tc := range []struct {
		name string
		p    Probe
		want string
	}{
		{"ok", Probe{Target: ok.URL, Options: private, Request: head(ok.URL + "/")}, OK},
		{"HEAD refused, GET ok", Probe{Target: ok.URL, Options: private, Request: head(ok.URL + "/get-only")}, OK},
		{"status", Probe{Target: ok.URL, Options: private, Request: head(ok.URL + "/missing")}, "HTTP 404"},
		{"guard", Probe{Target: ok.URL, Options: egress.Options{Resolver: noDNS}, Request: head(ok.URL + "/")}, Guard},
		{"guard on connect", Probe{Target: ok.URL, Options: egress.Options{Resolver: noDNS}}, Guard},
		{"connect", Probe{Target: closedURL, Options: private}, Connect},
		{"tls", Probe{Target: tlsSrv.URL, Options: private}, TLS},
		{"dns", Probe{Target: "https://nowhere.test", Options: egress.Options{Resolver: noDNS}}, DNS},
		{"api answer", Probe{Target: ok.URL, Options: private, Secrets: []string{"99991663"},
			Request: func(ctx context.Context) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodPost, ok.URL+"/open-apis/auth", nil)
			},
			Accept: func(body []byte) string { return string(body) }}, Answer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.p.Run(context.Background())
			if r.Result != tc.want || r.OK != (tc.want == OK) || r.Route != egress.RouteDirect {
				t.Fatalf("result %+v, want %s", r, tc.want)
			}
			if strings.Contains(r.Detail, "99991663") || strings.Contains(r.Detail, "127.0.0.1") {
				t.Fatalf("detail %q shows a secret or an address", r.Detail)
			}
		})
	}
}

// Show keeps scheme and host: a hook URL's path and query are its token.
func TestShow_KeepsOnlySchemeAndHost(t *testing.T) {
	if got := Show("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=s3cret"); got != "https://qyapi.weixin.qq.com" {
		t.Fatalf("Show = %q", got)
	}
}
