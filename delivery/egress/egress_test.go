package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestGuardAddresses(t *testing.T) {
	tests := []struct {
		addr         string
		strict, open bool // allowed without / with AllowPrivate
	}{
		{"127.0.0.1:443", false, true},
		{"10.0.0.5:443", false, true},
		{"192.168.1.1:80", false, true},
		{"172.16.0.1:443", false, true},
		// Cloud metadata stays refused with private networks allowed.
		{"169.254.169.254:80", false, false},
		{"169.254.169.253:80", false, true},
		{"[fd00:ec2::254]:80", false, false},
		{"[::ffff:169.254.169.254]:443", false, false},
		{"100.64.0.1:443", false, true},
		{"0.0.0.0:80", false, true},
		{"[::1]:443", false, true},
		{"[fe80::1]:443", false, true},
		{"[fc00::1]:443", false, true},
		{"[::ffff:127.0.0.1]:443", false, true},
		{"[::ffff:169.254.169.254]:80", false, false},
		{"[64:ff9b::7f00:1]:443", false, true},
		{"[2002:7f00:1::1]:443", false, true},
		{"93.184.216.34:443", true, true},
		{"93.184.216.34:80", true, true},
		{"93.184.216.34:8080", false, true},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", true, true},
		{"[::ffff:93.184.216.34]:443", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			for _, allow := range []bool{false, true} {
				want := tt.strict
				if allow {
					want = tt.open
				}
				err := Guard(allow)("tcp6", tt.addr, nil)
				if (err == nil) != want {
					t.Fatalf("allowPrivate=%v: err=%v, want allowed=%v", allow, err, want)
				}
				if err != nil && !errors.Is(err, ErrBlocked) {
					t.Fatalf("error %v is not ErrBlocked", err)
				}
				if err != nil && strings.Contains(err.Error(), strings.Split(strings.Trim(tt.addr, "["), "]")[0]) {
					t.Fatalf("error %q names the address", err)
				}
			}
		})
	}
}

func newOK(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/target", http.StatusFound)
		default:
			_, _ = io.WriteString(w, r.Header.Get("User-Agent"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func port(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClientRefusesLoopbackWithoutAllowPrivate(t *testing.T) {
	srv := newOK(t)
	p := port(t, srv)
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]"} {
		t.Run(host, func(t *testing.T) {
			u := "http://" + host + ":" + p + "/"
			_, err := Client(Options{}).Get(u)
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("strict GET %s: err=%v, want ErrBlocked", host, err)
			}
			if !NotSent(err) {
				t.Fatalf("blocked request not classified NotSent: %v", err)
			}
			resp, err := Client(Options{AllowPrivate: true}).Get(u)
			if err != nil {
				if errors.Is(err, ErrBlocked) {
					t.Fatalf("AllowPrivate GET %s blocked: %v", host, err)
				}
				t.Skipf("loopback %s not reachable here: %v", host, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
}

func TestTrustedDestinationOnly(t *testing.T) {
	trusted := newOK(t)
	other := newOK(t)
	ap := netip.MustParseAddrPort(trusted.Listener.Addr().String())
	c := Client(Options{Trusted: []netip.AddrPort{ap}})
	resp, err := c.Get(trusted.URL)
	if err != nil {
		t.Fatalf("trusted destination refused: %v", err)
	}
	resp.Body.Close()
	if _, err := c.Get(other.URL); !errors.Is(err, ErrBlocked) {
		t.Fatalf("untrusted loopback: err=%v, want ErrBlocked", err)
	}
}

func TestClientRefusesMetadataAndPrivateLiterals(t *testing.T) {
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "https://10.0.0.5/", "http://[::1]/"} {
		_, err := Client(Options{}).Get(u)
		if !errors.Is(err, ErrBlocked) {
			t.Fatalf("GET %s: err=%v, want ErrBlocked", u, err)
		}
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	srv := newOK(t)
	resp, err := Client(Options{AllowPrivate: true}).Get(srv.URL + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/target" {
		t.Fatalf("got %d %q, want the 302 itself", resp.StatusCode, resp.Header.Get("Location"))
	}

	r, err := Resty(Options{AllowPrivate: true}).R().Get(srv.URL + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != http.StatusFound {
		t.Fatalf("resty status %d, want 302", r.StatusCode())
	}
}

func TestRestyGuarded(t *testing.T) {
	srv := newOK(t)
	_, err := Resty(Options{}).R().Get(srv.URL)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("err=%v, want ErrBlocked", err)
	}
	r, err := Resty(Options{AllowPrivate: true}).R().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.String(); got != DefaultUserAgent() {
		t.Fatalf("User-Agent %q, want %q", got, DefaultUserAgent())
	}
}

func TestDefaultUserAgent(t *testing.T) {
	srv := newOK(t)
	resp, err := Client(Options{AllowPrivate: true}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(b), "herald/") {
		t.Fatalf("User-Agent %q", b)
	}
}

// TestI3_NotSentClassification separates failures that prove nothing left
// this host (safe to retry) from failures after the request was written.
func TestI3_NotSentClassification(t *testing.T) {
	// A port with nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	l.Close()

	// A server that reads the request and hangs up without answering.
	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hangup.Close() })
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			c.Close()
		}
	}()

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(tlsSrv.Close)

	tests := []struct {
		name  string
		allow bool
		url   string
		want  bool
	}{
		{"connection refused", true, "http://" + closedAddr + "/", true},
		{"blocked address", false, "http://" + closedAddr + "/", true},
		{"blocked metadata", false, "http://169.254.169.254/", true},
		{"dns failure", true, "http://herald-test.invalid/", true},
		{"tls handshake failure", true, tlsSrv.URL, true},
		{"read then closed", true, "http://" + hangup.Addr().String() + "/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, tt.url, strings.NewReader("{}"))
			resp, err := Client(Options{AllowPrivate: tt.allow}).Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("request succeeded with %d", resp.StatusCode)
			}
			if got := NotSent(err); got != tt.want {
				t.Fatalf("NotSent(%v) = %v, want %v", err, got, tt.want)
			}
		})
	}
	if NotSent(nil) || NotSent(io.EOF) {
		t.Fatal("nil / EOF must not be NotSent")
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url   string
		allow bool
		want  error
	}{
		{"https://hooks.example.com/herald", false, nil},
		{"https://hooks.example.com:443/x", false, nil},
		{"https://hooks.example.com:8443/x", false, ErrBlocked},
		{"https://hooks.example.com:8443/x", true, nil},
		{"http://hooks.example.com/x", false, ErrBadURL},
		{"http://hooks.example.com/x", true, ErrBadURL},
		{"http://127.0.0.1:8080/x", false, ErrBadURL},
		{"http://127.0.0.1:8080/x", true, nil},
		{"http://localhost:8080/x", true, nil},
		{"http://[::1]:8080/x", true, nil},
		{"https://127.0.0.1/x", false, ErrBlocked},
		{"https://169.254.169.254/x", false, ErrBlocked},
		{"https://169.254.169.254/x", true, ErrBlocked},
		{"https://[fd00:ec2::254]/x", true, ErrBlocked},
		{"https://[fd00:ec2::253]/x", true, nil},
		{"https://[::ffff:10.0.0.1]/x", false, ErrBlocked},
		{"https://localhost/x", false, ErrBlocked},
		{"https://user:pass@hooks.example.com/x", false, ErrBadURL},
		{"ftp://hooks.example.com/x", false, ErrBadURL},
		{"file:///etc/passwd", true, ErrBadURL},
		{"https:///nohost", false, ErrBadURL},
		{"::not a url", false, ErrBadURL},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := CheckURL(tt.url, tt.allow)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("CheckURL(%q, %v) = %v, want %v", tt.url, tt.allow, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "pass") {
				t.Fatalf("error leaks userinfo: %v", err)
			}
		})
	}
}

func TestI10_RedactDropsURL(t *testing.T) {
	const secret = "hook-secret-path"
	_, err := Client(Options{}).Get("https://127.0.0.1/" + secret + "?token=" + secret)
	if err == nil || !strings.Contains(err.Error(), secret) {
		t.Fatalf("precondition: %v", err)
	}
	red := Redact(err)
	if strings.Contains(red.Error(), secret) || strings.Contains(red.Error(), "127.0.0.1") ||
		!errors.Is(red, ErrBlocked) || !NotSent(red) {
		t.Fatalf("Redact: %v", red)
	}
	if Redact(nil) != nil || Redact(io.EOF) != io.EOF {
		t.Fatal("Redact must pass other errors through")
	}
}
