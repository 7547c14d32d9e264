package feishu

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// Backoff between long-connection restarts after the SDK client gives up.
const (
	wsBackoffMin = 5 * time.Second
	wsBackoffMax = 5 * time.Minute
)

// dispatcher routes the long connection's events to the same handling as
// webhook events. The connection itself is authenticated by the app
// secret, so it carries neither signature nor encryption.
func (c *Channel) dispatcher() *dispatcher.EventDispatcher {
	return dispatcher.NewEventDispatcher("", "").
		OnP2MessageReceiveV1(func(ctx context.Context, e *larkim.P2MessageReceiveV1) error {
			return c.onMessage(ctx, e)
		}).
		OnP2CardActionTrigger(func(ctx context.Context, e *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
			return c.onCard(ctx, e)
		})
}

// runWS keeps the SDK's long-connection client running until ctx ends.
// The client's Start reconnects by itself and returns only on a client
// error (bad credentials, connection limit); it never returns otherwise
// and ignores its context, so it runs in a goroutine that is abandoned at
// shutdown: events it still receives then are refused (ErrClosed, so the
// platform re-pushes them to another connection).
func (c *Channel) runWS(ctx context.Context) {
	c.routeLongConn()
	backoff := wsBackoffMin
	for {
		cli := larkws.NewClient(c.o.AppID, c.o.AppSecret,
			larkws.WithEventHandler(c.dispatcher()),
			larkws.WithDomain(c.o.BaseURL),
			larkws.WithLogger(sdkLogger{c: c}),
			larkws.WithLogLevel(larkcore.LogLevelInfo),
			larkws.WithAutoReconnect(true),
		)
		c.setStatus("connecting")
		errc := make(chan error, 1)
		go func() { errc <- cli.Start(context.WithoutCancel(ctx)) }()
		select {
		case <-ctx.Done():
			return
		case err := <-errc:
			if err == nil {
				err = errors.New("long connection ended")
			}
			c.setStatus("error: long connection refused; retrying")
			c.log.Warn().Str("error", c.scrub(err.Error())).Str("retry_in", backoff.String()).Msg("feishu long connection failed")
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, wsBackoffMax)
	}
}

// routeLongConn points the process's default HTTP client and websocket
// dialer, which the SDK's long-connection client uses, at the channel's
// route (Options.LongConn). The dialer opens the tunnel itself, so the
// websocket library's own proxy lookup is off.
func (c *Channel) routeLongConn() {
	lc := c.o.LongConn
	if lc == nil {
		return
	}
	http.DefaultClient.Transport = lc.Transport
	websocket.DefaultDialer = &websocket.Dialer{NetDialContext: lc.Dial, HandshakeTimeout: 45 * time.Second}
}
