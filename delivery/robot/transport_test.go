package robot

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/delivery/egress"
)

// timeoutErr is a net.Error that timed out, as a read deadline reports.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestI3_TransportClassification(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, refused := net.Dial("tcp", addr)
	if refused == nil {
		t.Skip("closed port accepted a connection")
	}
	post := func(err error) error { return &url.Error{Op: "Post", URL: "https://hook.example/x", Err: err} }
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "hook.invalid", IsNotFound: true}}
	tests := []struct {
		name   string
		err    error
		want   delivery.Result
		reason string
		after  time.Duration
	}{
		{"guard refused", post(fmt.Errorf("dial: %w", egress.ErrBlocked)), delivery.Failed, "blocked_destination", 0},
		{"bad url", post(egress.ErrBadURL), delivery.Failed, "blocked_destination", 0},
		{"dns", post(dns), delivery.RetryAfter, "dns", delivery.NotSentWait},
		{"refused", post(refused), delivery.RetryAfter, "connect_failed", delivery.NotSentWait},
		{"canceled", post(context.Canceled), delivery.Unknown, "canceled", 0},
		{"deadline", post(context.DeadlineExceeded), delivery.Unknown, "timeout", 0},
		{"read timeout", post(&net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}), delivery.Unknown, "timeout", 0},
		{"eof after write", post(io.EOF), delivery.Unknown, "connection_lost", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classifyTransport(tt.err)
			deliverytest.Outcome(t, got, tt.want, tt.reason)
			if got.After != tt.after {
				t.Errorf("after = %v, want %v", got.After, tt.after)
			}
		})
	}
}
