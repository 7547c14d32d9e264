package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is an authoritative DNS server on 127.0.0.1 speaking real DNS
// over UDP: A and AAAA answers from a fixed zone, in the zone's order,
// NXDOMAIN for names outside it. It counts the questions asked per name,
// so a test can tell that a name went through it.
type fakeDNS struct {
	conn net.PacketConn
	zone map[string][]netip.Addr // lower-case name without the final dot

	mu    sync.Mutex
	asked map[string]int
}

func newFakeDNS(t *testing.T, zone map[string][]string) *fakeDNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{conn: conn, zone: map[string][]netip.Addr{}, asked: map[string]int{}}
	for name, addrs := range zone {
		for _, a := range addrs {
			d.zone[strings.ToLower(name)] = append(d.zone[strings.ToLower(name)], netip.MustParseAddr(a))
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); d.serve() }()
	t.Cleanup(func() { conn.Close(); <-done })
	return d
}

// resolver returns a Go resolver that sends every query to d.
func (d *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "udp", d.conn.LocalAddr().String())
		},
	}
}

func (d *fakeDNS) questions(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked[name]
}

func (d *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if out, ok := d.answer(buf[:n]); ok {
			_, _ = d.conn.WriteTo(out, from)
		}
	}
}

// answer builds the reply to one query; ok is false for a packet that is
// not a query with one question (dropped, as a server would).
func (d *fakeDNS) answer(req []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil || h.Response {
		return nil, false
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil, false
	}
	q := qs[0]
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	d.mu.Lock()
	d.asked[name]++
	d.mu.Unlock()

	addrs, known := d.zone[name]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	for _, a := range addrs {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			rr.Type = dnsmessage.TypeA
			err = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && !a.Is4():
			rr.Type = dnsmessage.TypeAAAA
			err = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil, false
	}
	return out, true
}

func TestFakeDNSAnswersLikeAServer(t *testing.T) {
	d := newFakeDNS(t, map[string][]string{
		"both.herald.test": {"203.0.114.7", "2606:4700::6810:84e5"},
	})
	got, err := d.resolver().LookupNetIP(context.Background(), "ip", "both.herald.test")
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]bool{netip.MustParseAddr("203.0.114.7"): true, netip.MustParseAddr("2606:4700::6810:84e5"): true}
	if len(got) != 2 || !want[got[0].Unmap()] || !want[got[1].Unmap()] {
		t.Fatalf("lookup = %v", got)
	}
	_, err = d.resolver().LookupNetIP(context.Background(), "ip", "absent.herald.test")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("absent name: %v, want not found", err)
	}
}
