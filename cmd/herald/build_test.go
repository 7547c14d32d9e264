package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store/bolt"
)

// recipients.<name>.webhook.timeout reaches the sink: an attempt to a
// receiver that never answers ends unknown (it may have arrived, I3) after
// that timeout, not after the 10 s default.
func TestRoutingAppliesTheWebhookTimeout(t *testing.T) {
	release := make(chan struct{})
	rv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer rv.Close()
	defer close(release)

	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := &configs.Config{Language: "en", Location: time.UTC}
	cfg.Policy.AllowPrivateNetworks = true
	cfg.Recipients = map[string]configs.Recipient{"ops": {Webhook: &configs.Webhook{
		URL: rv.URL + "/in", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Timeout: configs.Duration(300 * time.Millisecond)}}}
	s := &service{cfg: cfg, log: zerolog.Nop(), store: st, prefs: &chatprefs.Store{KV: st.Channels(), Zone: time.UTC}}
	tc, err := s.routing(cfg)
	if err != nil {
		t.Fatal(err)
	}
	route, ok := tc.Named["ops"]
	if !ok {
		t.Fatal("no route for the webhook recipient")
	}
	start := time.Now()
	out := route.Sink.Send(context.Background(), delivery.Delivery{Key: "fx_timeout", To: route.To, Attempt: 1,
		Message: delivery.Message{Kind: delivery.KindInbound, Title: "t", Text: "x", OccurredAt: start}})
	if took := time.Since(start); out.Result != delivery.Unknown || took > 5*time.Second {
		t.Fatalf("outcome %+v after %v; want unknown after the configured 300ms, not the 10s default", out, took)
	}
}
