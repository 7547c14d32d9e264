package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"time"

	tgchan "github.com/herald-bridge/herald/channels/telegram"
	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/delivery/egress"
)

// setRoutes builds the config's routes (SPEC §17) and puts them in force:
// at start and on every reload, so a SIGHUP changes the proxies of sinks,
// sources and the assistant at once. A config that validated always builds.
func (s *service) setRoutes(cfg *configs.Config) error {
	rs, err := cfg.Routes()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.routeSet = rs
	s.mu.Unlock()
	return nil
}

// route is the route a proxy: setting names, under the routes in force.
// A name the config does not define (it cannot pass validation) is the
// default route.
func (s *service) route(name string) *egress.Route {
	s.mu.Lock()
	rs := s.routeSet
	s.mu.Unlock()
	r, err := rs.Get(name)
	if err != nil {
		r, _ = rs.Get("")
	}
	return r
}

// platformOptions are the egress options of a chat platform's API: the
// admin configured its URL, so the guard does not judge it; its route does
// apply. timeout bounds the wait for an answer's header.
func platformOptions(r *egress.Route, timeout time.Duration) egress.Options {
	return egress.Options{Route: r, AnyAddress: true, Timeout: timeout}
}

// platformClient is an HTTP client for a chat platform's API on route r,
// with no overall timeout of its own (the platform libraries bound their
// calls; a long poll waits longer than a call).
func platformClient(r *egress.Route, timeout time.Duration) *http.Client {
	return &http.Client{Transport: egress.SharedTransport(platformOptions(r, timeout))}
}

// telegramWait bounds the wait for a Bot API answer: longer than the
// long poll, which the server holds open for up to its timeout.
const telegramWait = tgchan.DefaultPollTimeout + 30*time.Second

// platformDial dials a chat platform's long connection (host:port) over
// route r, for clients that dial themselves.
func platformDial(r *egress.Route) func(ctx context.Context, network, addr string) (net.Conn, error) {
	o := platformOptions(r, 0)
	return func(ctx context.Context, _ string, addr string) (net.Conn, error) {
		c, _, err := egress.Dial(ctx, o, &url.URL{Scheme: "wss", Host: addr})
		return c, err
	}
}
