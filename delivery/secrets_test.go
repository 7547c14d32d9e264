package delivery_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
)

// TestI10_DispatcherLogsAndMetricsNameNoRecipient: pushes to a transport
// that is off, to a webhook that drops the connection and to a Telegram
// chat leave logs and metrics without any chat id, URL, token or secret.
func TestI10_DispatcherLogsAndMetricsNameNoRecipient(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, func(_ int, w http.ResponseWriter) bool { dropConnection(t, w); return false })
	api := newFakeBotAPI(t)
	api.send = func(_ int, w http.ResponseWriter) bool {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`))
		return false
	}
	const offChat, chat = "feishu:chat:oc_9f8e7d6c5b4a", "telegram:chat:-1009876543210"
	hooks := webhookRoute(t, rv, false)
	tg := telegramRoute(t, api.URL)
	table := delivery.NewTable(delivery.TableConfig{})
	log, logs := deliverytest.Logger()
	reg := prometheus.NewRegistry()

	off := r.admit("hook:ci", "d-1", offChat, inbound("deploy"), 0)
	lost := r.admit("hook:ci", "d-2", "ops", inbound("deploy"), 0)
	blocked := r.admit("hook:ci", "d-3", chat, inbound("deploy"), 0)
	r.start(routerFunc(func(recipient string) (delivery.Route, error) {
		switch {
		case recipient == "ops":
			return hooks.Resolve(recipient)
		case strings.HasPrefix(recipient, "telegram:"):
			return tg.Resolve(recipient)
		}
		return table.Resolve(recipient)
	}), "w", func(o *delivery.Options) { o.Log = log; o.Metrics = delivery.NewMetrics(reg) })

	// A push to a transport that is off waits durably: held, no attempt.
	waitFor(t, func() bool {
		fx, err := r.st.Ledger().Get(context.Background(), off)
		return err == nil && fx.State == store.Pending && len(fx.Attempts) == 0 && fx.NotBefore.After(r.clock.Now())
	}, "the push to a transport that is off to be held")
	r.settled(lost, store.Unknown)
	if fx := r.settled(blocked, store.Failed); fx.Error != "blocked" {
		t.Errorf("push to a chat that blocked the bot: %q, want blocked", fx.Error)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&metrics, mf); err != nil {
			t.Fatal(err)
		}
	}
	secrets := []string{"oc_9f8e7d6c5b4a", "-1009876543210", rv.URL, api.URL, botToken, hookSecret, "127.0.0.1"}
	if !strings.Contains(logs.String(), "holding pushes while their transport is off") {
		t.Errorf("the held push was not logged:\n%s", logs.String())
	}
	deliverytest.NoSecretInLogs(t, logs, secrets...)
	for _, s := range secrets {
		if strings.Contains(metrics.String(), s) {
			t.Errorf("metrics name %q:\n%s", s, metrics.String())
		}
	}
	if !strings.Contains(metrics.String(), `herald_delivery_attempts_total{kind="webhook",result="unknown"} 1`) {
		t.Errorf("metrics lack the webhook attempt:\n%s", metrics.String())
	}
}

// routerFunc adapts a function to delivery.Router.
type routerFunc func(recipient string) (delivery.Route, error)

func (f routerFunc) Resolve(recipient string) (delivery.Route, error) { return f(recipient) }

var _ delivery.Router = routerFunc(nil)
