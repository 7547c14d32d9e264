package feishu

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/herald-bridge/herald/conversation"
)

// fakeFrontier is the platform's long-connection server: it pushes
// event frames (protobuf, as the platform does) and collects the client's
// answers.
type fakeFrontier struct {
	srv     *httptest.Server
	conns   chan *websocket.Conn
	answers chan larkws.Response
	mu      sync.Mutex
	conn    *websocket.Conn
}

func newFrontier(t *testing.T) *fakeFrontier {
	f := &fakeFrontier{conns: make(chan *websocket.Conn, 4), answers: make(chan larkws.Response, 16)}
	up := websocket.Upgrader{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		f.conns <- c
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			var fr larkws.Frame
			if fr.Unmarshal(b) != nil || fr.Method != int32(larkws.FrameTypeData) {
				continue // pings
			}
			var resp larkws.Response
			if json.Unmarshal(fr.Payload, &resp) == nil {
				f.answers <- resp
			}
		}
	}))
	t.Cleanup(func() {
		f.mu.Lock()
		if f.conn != nil {
			f.conn.Close()
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

func (f *fakeFrontier) url() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws/v2?device_id=d-1&service_id=7&access_key=ak-SECRET&ticket=tk-SECRET"
}

// accept waits for the client to connect.
func (f *fakeFrontier) accept() {
	c := <-f.conns
	f.mu.Lock()
	f.conn = c
	f.mu.Unlock()
}

// push sends one event frame and returns the client's answer.
func (f *fakeFrontier) push(t *testing.T, id string, payload []byte) larkws.Response {
	t.Helper()
	fr := larkws.Frame{Method: int32(larkws.FrameTypeData), Service: 7, Payload: payload, Headers: []larkws.Header{
		{Key: larkws.HeaderType, Value: string(larkws.MessageTypeEvent)},
		{Key: larkws.HeaderMessageID, Value: id}, {Key: larkws.HeaderTraceID, Value: "tr-" + id},
		{Key: larkws.HeaderSum, Value: "1"}, {Key: larkws.HeaderSeq, Value: "0"},
	}}
	b, err := fr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	err = f.conn.WriteMessage(websocket.BinaryMessage, b)
	f.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return <-f.answers
}

func TestWebsocketMode(t *testing.T) {
	skipUnderRace(t)
	front := newFrontier(t)
	r := newTestChannel(t, false, func(o *Options) { o.Mode = ModeWebsocket; o.VerificationToken = "" })
	r.fake.mu.Lock()
	r.fake.wsURL = front.url()
	r.fake.mu.Unlock()
	r.h.answer = func(m conversation.Message) []conversation.Reply {
		if m.Button != nil {
			return []conversation.Reply{{Text: "Approved r-1", Edit: true, Toast: "Approved"}}
		}
		return []conversation.Reply{{Text: "pong"}}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.ch.Run(ctx) }()
	front.accept()
	waitFor(t, "connected status", func() bool { return r.ch.Status() == "on (websocket)" })

	// A message: answered 200, handled, replied to; a re-push is not.
	ev := messageEvent("", "ev-ws-1", "om_ws_1", chatP2P, "p2p", "/help")
	for i := 0; i < 2; i++ {
		if a := front.push(t, "m-1", ev); a.StatusCode != http.StatusOK {
			t.Fatalf("answer %d", a.StatusCode)
		}
	}
	r.ch.chats.wait()
	if n := len(r.h.got()); n != 1 {
		t.Fatalf("handled %d, want 1", n)
	}
	if n := len(r.fake.sent()); n != 1 {
		t.Fatalf("replied %d, want 1", n)
	}

	// A card press: the answer frame carries the toast and the card.
	a := front.push(t, "m-2", cardEvent("", "ev-ws-2", "ou_admin", chatGroup, "om_card", map[string]string{"action": "approve", "arg": "r-1"}))
	if a.StatusCode != http.StatusOK || !strings.Contains(string(a.Data), `"content":"Approved"`) || !strings.Contains(string(a.Data), "Approved r-1") {
		t.Fatalf("card answer %d %s", a.StatusCode, a.Data)
	}

	// Shutdown never waits on the SDK client; later events are refused so
	// the platform re-pushes them elsewhere.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a := front.push(t, "m-3", messageEvent("", "ev-ws-3", "om_ws_3", chatP2P, "p2p", "/help")); a.StatusCode != http.StatusInternalServerError {
		t.Fatalf("event after shutdown answered %d", a.StatusCode)
	}
	if strings.Contains(r.logs.String(), "SECRET") {
		t.Fatalf("logs hold the connection ticket:\n%s", r.logs)
	}
}

func TestWebsocketRefusedThenStopped(t *testing.T) {
	skipUnderRace(t)
	r := newTestChannel(t, false, func(o *Options) { o.Mode = ModeWebsocket; o.VerificationToken = "" })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.ch.Run(ctx) }()
	waitFor(t, "error status", func() bool { return strings.HasPrefix(r.ch.Status(), "error") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.ch.Status() != "stopped" {
		t.Fatalf("status %q", r.ch.Status())
	}
}

func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("the SDK's websocket client has a data race of its own; this test runs without -race in make test")
	}
}
