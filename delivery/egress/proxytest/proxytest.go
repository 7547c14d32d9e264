// Package proxytest runs forward proxies on loopback for tests: an HTTP
// proxy that answers CONNECT and absolute-URI requests, and a SOCKS5 proxy
// with username/password authentication. Each resolves names only from its
// own table, so a test whose targets are names that resolve nowhere else
// (api.telegram.test) proves by its success that the traffic went through
// the proxy. Every target asked is recorded, authorised or not.
package proxytest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is one running proxy.
type Proxy struct {
	// Addr is the proxy's host:port on loopback.
	Addr string

	scheme     string
	user, pass string
	hosts      map[string]string
	ln         net.Listener

	mu      sync.Mutex
	targets []string
	locals  []string
	conns   map[net.Conn]bool
	closed  bool
	wg      sync.WaitGroup
}

// NewHTTP starts an HTTP forward proxy. hosts maps "name:port" (or a bare
// name, any port) to the "ip:port" it reaches; a literal address target is
// dialled as it is. With user set, requests without those credentials
// are answered 407.
func NewHTTP(t testing.TB, hosts map[string]string, user, pass string) *Proxy {
	return start(t, "http", hosts, user, pass)
}

// NewSOCKS5 starts a SOCKS5 proxy (CONNECT only). With user set, it
// accepts only username/password authentication with those credentials.
func NewSOCKS5(t testing.TB, hosts map[string]string, user, pass string) *Proxy {
	return start(t, "socks5h", hosts, user, pass)
}

func start(t testing.TB, scheme string, hosts map[string]string, user, pass string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxytest: listen: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), scheme: scheme, user: user, pass: pass, hosts: hosts, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// URL is the proxy's URL with the credentials it was started with.
func (p *Proxy) URL() string { return p.URLWith(p.user, p.pass) }

// URLWith is the proxy's URL with other credentials (none when user is "").
func (p *Proxy) URLWith(user, pass string) string {
	u := &url.URL{Scheme: p.scheme, Host: p.Addr}
	if user != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u.String()
}

// Targets are the host:port targets asked of the proxy so far.
func (p *Proxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// Close stops the proxy and cuts every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) record(target string) {
	p.mu.Lock()
	p.targets = append(p.targets, target)
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			if p.scheme == "http" {
				p.serveHTTP(c)
			} else {
				p.serveSOCKS(c)
			}
		}()
	}
}

// dial reaches target through the proxy's own table.
func (p *Proxy) dial(target string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, err
	}
	addr, ok := p.hosts[target]
	if !ok {
		addr, ok = p.hosts[host]
	}
	if !ok {
		if net.ParseIP(host) == nil {
			return nil, errors.New("no such host here")
		}
		addr = target
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if !p.track(c) {
		return nil, errors.New("proxy closed")
	}
	p.mu.Lock()
	p.locals = append(p.locals, c.LocalAddr().String())
	p.mu.Unlock()
	return c, nil
}

// Carried reports whether a connection a target server saw coming from
// remote (its RemoteAddr) is one the proxy opened.
func (p *Proxy) Carried(remote string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.locals {
		if l == remote {
			return true
		}
	}
	return false
}

// pipe copies both ways until either side ends.
func (p *Proxy) pipe(a, b net.Conn, ra io.Reader) {
	defer p.untrack(b)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, ra); done <- struct{}{} }()
	go func() { _, _ = io.Copy(a, b); done <- struct{}{} }()
	<-done
}

func (p *Proxy) serveHTTP(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		target := req.Host
		if req.Method != http.MethodConnect {
			target = req.URL.Host
			if req.URL.Port() == "" {
				target = net.JoinHostPort(req.URL.Hostname(), "80")
			}
		}
		p.record(target)
		if p.user != "" && req.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte(p.user+":"+p.pass)) {
			_, _ = io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"proxytest\"\r\nContent-Length: 0\r\n\r\n")
			if req.Method == http.MethodConnect {
				return
			}
			continue
		}
		up, err := p.dial(target)
		if err != nil {
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		if req.Method == http.MethodConnect {
			_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			p.pipe(c, up, br)
			return
		}
		// An absolute-URI request goes on in origin form, one per connection.
		req.Header.Del("Proxy-Authorization")
		req.Header.Del("Proxy-Connection")
		req.Close = true
		if err := req.Write(up); err != nil {
			p.untrack(up)
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(up), req)
		if err != nil {
			p.untrack(up)
			return
		}
		resp.Close = true
		_ = resp.Write(c)
		resp.Body.Close()
		p.untrack(up)
		return
	}
}

func (p *Proxy) serveSOCKS(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	head := make([]byte, 2)
	if _, err := io.ReadFull(br, head); err != nil || head[0] != 5 {
		return
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	want := byte(0)
	if p.user != "" {
		want = 2
	}
	if !strings.ContainsRune(string(methods), rune(want)) {
		_, _ = c.Write([]byte{5, 0xff})
		return
	}
	_, _ = c.Write([]byte{5, want})
	if want == 2 {
		// RFC 1929: ver, ulen, user, plen, pass.
		b := make([]byte, 2)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		user := make([]byte, b[1])
		if _, err := io.ReadFull(br, user); err != nil {
			return
		}
		if _, err := io.ReadFull(br, b[:1]); err != nil {
			return
		}
		pass := make([]byte, b[0])
		if _, err := io.ReadFull(br, pass); err != nil {
			return
		}
		if string(user) != p.user || string(pass) != p.pass {
			_, _ = c.Write([]byte{1, 1})
			return
		}
		_, _ = c.Write([]byte{1, 0})
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(br, req); err != nil || req[0] != 5 {
		return
	}
	var host string
	switch req[3] {
	case 1, 4:
		ip := make([]byte, map[byte]int{1: 4, 4: 16}[req[3]])
		if _, err := io.ReadFull(br, ip); err != nil {
			return
		}
		host = net.IP(ip).String()
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return
		}
		host = string(name)
	default:
		return
	}
	pb := make([]byte, 2)
	if _, err := io.ReadFull(br, pb); err != nil {
		return
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(pb))))
	p.record(target)
	if req[1] != 1 {
		_, _ = c.Write([]byte{5, 7, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	up, err := p.dial(target)
	if err != nil {
		_, _ = c.Write([]byte{5, 4, 0, 1, 0, 0, 0, 0, 0, 0}) // host unreachable
		return
	}
	_, _ = c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	_ = c.SetDeadline(time.Time{})
	p.pipe(c, up, br)
}

// Cert is a self-signed certificate for test names, and a pool that
// trusts it.
type Cert struct {
	TLS  tls.Certificate
	Pool *x509.CertPool
	PEM  []byte
}

// NewCert makes a certificate valid for names.
func NewCert(t testing.TB, names ...string) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &Cert{TLS: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, Pool: pool,
		PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// NewTLSServer serves h over TLS on loopback with a certificate for
// names; the returned Cert's Pool trusts it.
func NewTLSServer(t testing.TB, h http.Handler, names ...string) (*httptest.Server, *Cert) {
	t.Helper()
	c := NewCert(t, names...)
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{c.TLS}, MinVersion: tls.VersionTLS12}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, c
}
