package main

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpDrainBound is how long `herald mcp` waits, once its input has
// closed, for the answers to requests that were already read. It exceeds
// the agent API client's own timeout, so every call ends in an answer.
const mcpDrainBound = 45 * time.Second

// drainTransport is a stdio transport that answers every request it read
// before it reports the end of its input. The SDK closes the session as
// soon as a read fails, which would drop the replies of handlers still
// running, so `printf '…' | herald mcp` would print nothing.
type drainTransport struct{ mcp.Transport }

func (t drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, pending: map[jsonrpc.ID]struct{}{}, changed: make(chan struct{}, 1)}, nil
}

type drainConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]struct{} // calls read and not yet answered
	changed chan struct{}           // a reply was written
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.wait(ctx)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		c.pending[req.ID] = struct{}{}
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	return err
}

// wait returns once every call read so far is answered, the session's
// context ends, or mcpDrainBound passes.
func (c *drainConn) wait(ctx context.Context) {
	bound := time.NewTimer(mcpDrainBound)
	defer bound.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-ctx.Done():
			return
		case <-bound.C:
			return
		}
	}
}
