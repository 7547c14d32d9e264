package egress

import (
	"errors"
	"strings"
	"testing"
)

// TestBlockedSaysTheAddressKindBeforeThePort: a local server on a high
// port is refused for being local, not for its port; a public address on
// another port is refused for the port. The message never holds the address.
func TestBlockedSaysTheAddressKindBeforeThePort(t *testing.T) {
	srv := newOK(t)
	tests := []struct {
		addr, kind string
	}{
		{"127.0.0.1:38975", KindLoopback},
		{"[::1]:8080", KindLoopback},
		{"10.1.2.3:8443", KindPrivate},
		{"192.168.0.1:443", KindPrivate},
		{"169.254.169.254:80", KindLinkLocal},
		{"100.64.0.1:9000", KindNonPublic},
		{"93.184.216.34:8080", KindPort},
	}
	for _, tt := range tests {
		err := Guard(false)("tcp", tt.addr, nil)
		var be *BlockedError
		if !errors.As(err, &be) || be.Kind != tt.kind || !errors.Is(err, ErrBlocked) {
			t.Errorf("Guard(%s) = %v, want kind %s", tt.addr, err, tt.kind)
			continue
		}
		host := tt.addr[:strings.LastIndex(tt.addr, ":")]
		if strings.Contains(err.Error(), strings.Trim(host, "[]")) {
			t.Errorf("Guard(%s) names the address: %v", tt.addr, err)
		}
	}
	for raw, kind := range map[string]string{
		"https://127.0.0.1:38975/feed": KindLoopback,
		"https://localhost:9/x":        KindLoopback,
		"https://10.0.0.1:8443/":       KindPrivate,
		"https://example.org:8443/":    KindPort,
	} {
		var be *BlockedError
		if err := CheckURL(raw, false); !errors.As(err, &be) || be.Kind != kind {
			t.Errorf("CheckURL(%s) = %v, want kind %s", raw, err, kind)
		}
	}
	_, err := Client(Options{}).Get(srv.URL)
	var be *BlockedError
	if !errors.As(err, &be) || be.Kind != KindLoopback {
		t.Errorf("GET of a local test server: %v, want a loopback refusal", err)
	}
}
