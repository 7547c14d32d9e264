// Package probe tries outbound endpoints over their routes and says, in
// one classified word, what happened (SPEC §17, herald doctor): ok, refused
// by guard, DNS, connect, TLS, proxy auth, proxy connect, timeout, or the
// HTTP status. A probe never pushes anything: it opens a connection, or
// asks a read-only question (getMe, a tenant token, a HEAD).
package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery/egress"
)

// Results a Check reports besides "HTTP <status>".
const (
	OK           = "ok"
	Guard        = "refused by guard"
	DNS          = "DNS"
	Connect      = "connect"
	TLS          = "TLS"
	ProxyAuth    = "proxy auth"
	ProxyConnect = "proxy connect"
	Timeout      = "timeout"
	Answer       = "unexpected answer"
	Failed       = "failed"
)

// MaxBody bounds what a probe reads of an answer.
const MaxBody = 64 << 10

// DefaultTimeout bounds one probe.
const DefaultTimeout = 10 * time.Second

// Probe is one endpoint to try.
type Probe struct {
	// Check names what is checked ("telegram getMe", "recipient ops").
	Check string
	// Target is the endpoint's URL. Only its scheme and host are shown.
	Target string
	// Options are the egress options the endpoint is reached with: its
	// guard and its route.
	Options egress.Options
	// Request, when set, builds the request to send; else the probe only
	// connects (TCP, and TLS for https).
	Request func(ctx context.Context) (*http.Request, error)
	// Accept, when set, judges a 2xx answer's body ("" means ok, else what
	// is wrong, without secrets).
	Accept func(body []byte) string
	// Secrets are scrubbed from every detail (I10).
	Secrets []string
}

// Result is what one probe found. Target and Detail carry no secret.
type Result struct {
	Check  string `json:"check"`
	Target string `json:"target"`
	Route  string `json:"route"`
	Result string `json:"result"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Millis int64  `json:"ms"`
}

// Run tries every probe, at most parallel at once, each bounded by
// DefaultTimeout, and returns their results in the probes' order.
func Run(ctx context.Context, probes []Probe, parallel int) []Result {
	out := make([]Result, len(probes))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = p.Run(ctx)
		}()
	}
	wg.Wait()
	return out
}

// Run tries p once.
func (p Probe) Run(ctx context.Context) Result {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	r := Result{Check: p.Check, Target: Show(p.Target), Route: egress.RouteDirect}
	u, err := url.Parse(p.Target)
	if err != nil || u.Host == "" {
		r.Result, r.Detail = Failed, "not a URL"
		return r
	}
	r.Route = p.Options.Route.Via(u)
	start := time.Now()
	if p.Request == nil {
		err = p.connect(ctx, u)
	} else {
		err = p.request(ctx, &r)
	}
	r.Millis = time.Since(start).Milliseconds()
	if err != nil {
		r.Result, r.Detail = Classify(err)
		r.Detail = scrub(r.Detail, p.Secrets)
		return r
	}
	if r.Result == "" {
		r.Result = OK
	}
	r.OK = r.Result == OK
	return r
}

// connect opens a connection to u's host over the route, with a TLS
// handshake for https, and closes it: nothing is sent.
func (p Probe) connect(ctx context.Context, u *url.URL) error {
	c, _, err := egress.Dial(ctx, p.Options, u)
	if err != nil {
		return err
	}
	defer c.Close()
	if u.Scheme != "https" && u.Scheme != "wss" {
		return nil
	}
	tc := tls.Client(c, &tls.Config{ServerName: u.Hostname(), RootCAs: p.Options.RootCAs, MinVersion: tls.VersionTLS12})
	return tc.HandshakeContext(ctx)
}

// request sends the probe's request and judges the answer.
func (p Probe) request(ctx context.Context, r *Result) error {
	req, err := p.Request(ctx)
	if err != nil {
		return err
	}
	o := p.Options
	o.Timeout = DefaultTimeout
	client := egress.Client(o)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	if req.Method == http.MethodHead && (resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		// A server that does not answer HEAD is asked with a GET, of
		// which at most MaxBody is read.
		resp.Body.Close()
		get := req.Clone(ctx)
		get.Method = http.MethodGet
		if resp, err = client.Do(get); err != nil {
			return err
		}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	switch {
	case resp.StatusCode >= 400:
		r.Result = fmt.Sprintf("HTTP %d", resp.StatusCode)
	case resp.StatusCode < 300 && p.Accept != nil:
		if why := p.Accept(body); why != "" {
			r.Result, r.Detail = Answer, scrub(why, p.Secrets)
		}
	}
	return nil
}

// Classify names the result of a failed attempt and a detail without
// addresses or credentials.
func Classify(err error) (result, detail string) {
	var dns *net.DNSError
	var op *net.OpError
	if pe, ok := egress.ProxyFailure(err); ok {
		switch pe.Kind {
		case egress.ProxyAuth:
			return ProxyAuth, pe.Error()
		case egress.ProxyConnect:
			return ProxyConnect, pe.Error()
		}
		return Connect, pe.Error()
	}
	switch {
	case errors.Is(err, egress.ErrBlocked), errors.Is(err, egress.ErrBadURL):
		return Guard, egress.RootCause(err)
	case errors.As(err, &dns):
		return DNS, "the name does not resolve"
	case egress.IsTLSFailure(err):
		return TLS, tlsCause(err)
	case errors.As(err, &op) && op.Op == "dial":
		return Connect, egress.RootCause(err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &op) && op.Timeout():
		return Timeout, "no answer in time"
	}
	return Failed, egress.RootCause(err)
}

// tlsCause says why a handshake failed, without the names and
// addresses the certificate errors quote.
func tlsCause(err error) string {
	var host x509.HostnameError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &host):
		return "the certificate is for another name"
	case errors.As(err, &unknown):
		return "the certificate is not signed by a trusted authority"
	case errors.As(err, &invalid):
		return "the certificate is not valid (expired or not for a server)"
	}
	return "the TLS handshake failed"
}

// Show is how a target is printed: scheme and host only (paths and
// queries of hook and API URLs carry tokens, I10).
func Show(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(address)"
	}
	return u.Scheme + "://" + u.Host
}

func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "…")
		}
	}
	return s
}
