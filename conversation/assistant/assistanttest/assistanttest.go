// Package assistanttest is a fake OpenAI-compatible chat-completions
// endpoint on 127.0.0.1 for tests of the assistant path: it speaks the
// real wire format, checks the bearer key, records every request and
// answers with what the test queued.
package assistanttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is one call the fake received.
type Request struct {
	Method, Path string
	Header       http.Header
	Raw          string // the body as sent
	Body         ChatRequest
}

// ChatRequest is the part of a chat-completions request the fake reads.
type ChatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

// System is the request's system message ("" when none).
func (r Request) System() string {
	for _, m := range r.Body.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// User is the request's last user message.
func (r Request) User() string {
	out := ""
	for _, m := range r.Body.Messages {
		if m.Role == "user" {
			out = m.Content
		}
	}
	return out
}

// Answer is how the fake answers. The zero value answers 200 with an
// empty message content.
type Answer struct {
	Status       int    // default 200
	Content      string // the assistant message's content
	FinishReason string // default "stop"
	Raw          string // when set, the whole body instead of a completion
	Hang         bool   // never answer: the client's timeout must end the call
}

// JSON is an Answer whose content is v marshalled.
func JSON(v any) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return Answer{Content: string(b)}
}

// Model is the fake endpoint.
type Model struct {
	// URL is the chat-completions endpoint to configure.
	URL string
	// Key is the only bearer key accepted; any other gets a 401 whose body
	// quotes part of the key, as real providers do.
	Key string

	srv  *httptest.Server
	stop chan struct{}

	mu     sync.Mutex
	answer Answer
	reqs   []Request
}

// New starts a fake accepting key, closed when the test ends.
func New(t testing.TB, key string) *Model {
	t.Helper()
	m := &Model{Key: key, stop: make(chan struct{}), answer: JSON(map[string]string{"action": "list"})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	m.URL = m.srv.URL + "/v1/chat/completions"
	t.Cleanup(func() {
		close(m.stop) // release hanging handlers before Close waits for them
		m.srv.Close()
	})
	return m
}

// Answer sets the answer to every following call.
func (m *Model) Answer(a Answer) {
	m.mu.Lock()
	m.answer = a
	m.mu.Unlock()
}

// Calls is how many requests arrived.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

// Requests returns every request so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// Last returns the latest request; it fails the test when there is none.
func (m *Model) Last(t testing.TB) Request {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model received no request")
	}
	return reqs[len(reqs)-1]
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: string(raw)}
	_ = json.Unmarshal(raw, &req.Body)
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	a := m.answer
	m.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+m.Key {
		shown := strings.TrimPrefix(got, "Bearer ")
		if len(shown) > 8 {
			shown = shown[:3] + "***" + shown[len(shown)-4:]
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`, shown)
		return
	}
	if a.Hang {
		select {
		case <-r.Context().Done():
		case <-m.stop:
		}
		return
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if a.Raw != "" {
		_, _ = io.WriteString(w, a.Raw)
		return
	}
	if status != http.StatusOK {
		fmt.Fprintf(w, `{"error":{"message":"upstream said %d","type":"server_error"}}`, status)
		return
	}
	finish := a.FinishReason
	if finish == "" {
		finish = "stop"
	}
	content, _ := json.Marshal(a.Content)
	fmt.Fprintf(w, `{"id":"chatcmpl-test","object":"chat.completion","created":1764460800,"model":%q,`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":%q}],`+
		`"usage":{"prompt_tokens":412,"completion_tokens":31,"total_tokens":443}}`, req.Body.Model, content, finish)
}
