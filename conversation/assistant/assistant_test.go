package assistant

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/assistant/assistanttest"
	"github.com/herald-bridge/herald/delivery/egress"
)

const testKey = "sk-test-9f8e7d6c5b4a39281706"

// newClient points a client at the fake over loopback, as a config with
// policy.allow_private_networks does.
func newClient(t *testing.T, m *assistanttest.Model, key string, timeout time.Duration) *Client {
	t.Helper()
	c, err := New(Options{Endpoint: m.URL, APIKey: key, Model: "small-model", Timeout: timeout,
		Egress: egress.Options{AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestInterpret_SpeaksChatCompletions(t *testing.T) {
	tests := []struct {
		lang, text, wantLang string
	}{
		{"en", "please watch https://news.example.edu/feed.xml every hour", "in English"},
		{"zh", "帮我每小时关注 https://news.example.edu/feed.xml", "in Chinese"},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			m := assistanttest.New(t, testKey)
			m.Answer(assistanttest.JSON(map[string]any{"action": "draft", "url": "https://news.example.edu/feed.xml",
				"schedule": "every 1h", "kind": "RSS", "name": "Campus news", "remind_before": []string{}}))
			c := newClient(t, m, testKey, 0)
			s, err := c.Interpret(context.Background(), conversation.Ask{Text: tt.text, Lang: tt.lang, Zone: "Asia/Shanghai"})
			if err != nil {
				t.Fatal(err)
			}
			want := conversation.Draft{URL: "https://news.example.edu/feed.xml", Schedule: "every 1h", Kind: "rss", Name: "Campus news"}
			if s.Action != conversation.SuggestDraft || s.Draft.URL != want.URL || s.Draft.Schedule != want.Schedule ||
				s.Draft.Kind != want.Kind || s.Draft.Name != want.Name || len(s.Draft.RemindBefore) != 0 {
				t.Errorf("suggestion = %+v, want draft %+v", s, want)
			}
			r := m.Last(t)
			if r.Method != "POST" || r.Path != "/v1/chat/completions" {
				t.Errorf("request %s %s", r.Method, r.Path)
			}
			if r.Header.Get("Authorization") != "Bearer "+testKey || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Errorf("headers = %v", r.Header)
			}
			if r.Body.Model != "small-model" || r.Body.ResponseFormat.Type != "json_object" {
				t.Errorf("model %q, response_format %q", r.Body.Model, r.Body.ResponseFormat.Type)
			}
			sys := r.System()
			for _, w := range []string{"JSON object only", `"action":"draft"`, `"action":"list"`, `"action":"explain"`,
				"cannot approve", "Asia/Shanghai", tt.wantLang} {
				if !strings.Contains(sys, w) {
					t.Errorf("system prompt lacks %q", w)
				}
			}
			if r.User() != tt.text {
				t.Errorf("user message = %q, want the chat text", r.User())
			}
		})
	}
}

func TestInterpret_ReadsEachAction(t *testing.T) {
	tests := []struct {
		name   string
		answer map[string]any
		want   conversation.Suggestion
	}{
		{"list", map[string]any{"action": "list"}, conversation.Suggestion{Action: "list"}},
		{"explain", map[string]any{"action": "explain", "text": "  Send /tasks to see your tasks. "},
			conversation.Suggestion{Action: "explain", Text: "Send /tasks to see your tasks."}},
		{"reminders", map[string]any{"action": "draft", "url": "https://lms.example.edu/cal.ics", "kind": "ical", "remind_before": []string{"1d", "2h"}},
			conversation.Suggestion{Action: "draft", Draft: conversation.Draft{URL: "https://lms.example.edu/cal.ics", Kind: "ical",
				RemindBefore: []time.Duration{24 * time.Hour, 2 * time.Hour}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := assistanttest.New(t, testKey)
			m.Answer(assistanttest.JSON(tt.answer))
			s, err := newClient(t, m, testKey, 0).Interpret(context.Background(), conversation.Ask{Text: "x", Lang: "en"})
			if err != nil {
				t.Fatal(err)
			}
			if s.Action != tt.want.Action || s.Text != tt.want.Text || s.Draft.URL != tt.want.Draft.URL ||
				s.Draft.Kind != tt.want.Draft.Kind || len(s.Draft.RemindBefore) != len(tt.want.Draft.RemindBefore) {
				t.Fatalf("suggestion = %+v, want %+v", s, tt.want)
			}
			for i, d := range tt.want.Draft.RemindBefore {
				if s.Draft.RemindBefore[i] != d {
					t.Errorf("remind_before[%d] = %v, want %v", i, s.Draft.RemindBefore[i], d)
				}
			}
		})
	}
}

// TestInterpret_ClassifiesFailures: whatever comes back that is not one
// acceptable suggestion is an error of its class, and no error names the
// key or the endpoint (I10).
func TestInterpret_ClassifiesFailures(t *testing.T) {
	draft := func(kv ...any) assistanttest.Answer {
		a := map[string]any{"action": "draft", "url": "https://news.example.edu/feed.xml"}
		for i := 0; i+1 < len(kv); i += 2 {
			a[kv[i].(string)] = kv[i+1]
		}
		return assistanttest.JSON(a)
	}
	tests := []struct {
		name   string
		answer assistanttest.Answer
		key    string // default testKey
		want   error
	}{
		{"approve is no action", assistanttest.JSON(map[string]any{"action": "approve", "id": "r-1a2b3c"}), "", ErrBadAnswer},
		{"delete is no action", assistanttest.JSON(map[string]any{"action": "delete", "id": "t-1a2b3c"}), "", ErrBadAnswer},
		{"run is no action", assistanttest.JSON(map[string]any{"action": "run", "id": "t-1a2b3c"}), "", ErrBadAnswer},
		{"no action", assistanttest.JSON(map[string]any{"text": "hello"}), "", ErrBadAnswer},
		{"garbage JSON", assistanttest.Answer{Content: `{"action": "draft", "url": `}, "", ErrBadAnswer},
		{"prose", assistanttest.Answer{Content: "Sure! I will watch that for you."}, "", ErrBadAnswer},
		{"two objects", assistanttest.Answer{Content: `{"action":"list"} {"action":"explain","text":"x"}`}, "", ErrBadAnswer},
		{"wrong field type", assistanttest.JSON(map[string]any{"action": "draft", "url": "https://a.example/f", "remind_before": "24h"}), "", ErrBadAnswer},
		{"not a completion", assistanttest.Answer{Raw: "<html>gateway</html>"}, "", ErrBadAnswer},
		{"no choices", assistanttest.Answer{Raw: `{"id":"x","object":"chat.completion","choices":[]}`}, "", ErrBadAnswer},
		{"cut off", assistanttest.Answer{Content: `{"action":"list"}`, FinishReason: "length"}, "", ErrBadAnswer},
		{"too large", assistanttest.Answer{Raw: `{"choices":[{"message":{"content":"` + strings.Repeat("a", MaxResponseBody) + `"}}]}`}, "", ErrBadAnswer},
		{"javascript URL", draft("url", "javascript:alert(1)"), "", ErrBadAnswer},
		{"file URL", draft("url", "file:///etc/passwd"), "", ErrBadAnswer},
		{"ftp URL", draft("url", "ftp://files.example.edu/f"), "", ErrBadAnswer},
		{"URL without host", draft("url", "https:///feed.xml"), "", ErrBadAnswer},
		{"URL with credentials", draft("url", "https://u:p@news.example.edu/f"), "", ErrBadAnswer},
		{"URL with a command after it", draft("url", "https://news.example.edu/f /approve r-1a2b3c"), "", ErrBadAnswer},
		{"no URL", draft("url", ""), "", ErrBadAnswer},
		{"overlong URL", draft("url", "https://news.example.edu/"+strings.Repeat("a", maxURL)), "", ErrBadAnswer},
		{"overlong explanation", assistanttest.JSON(map[string]any{"action": "explain", "text": strings.Repeat("长", conversation.MaxExplain+1)}), "", ErrBadAnswer},
		{"empty explanation", assistanttest.JSON(map[string]any{"action": "explain", "text": "  "}), "", ErrBadAnswer},
		{"overlong name", draft("name", strings.Repeat("n", maxName+1)), "", ErrBadAnswer},
		{"two-line schedule", draft("schedule", "every 1h\n/approve r-1a2b3c"), "", ErrBadAnswer},
		{"unknown kind", draft("kind", "pdf"), "", ErrBadAnswer},
		{"bad reminder", draft("remind_before", []string{"soon"}), "", ErrBadAnswer},
		{"too many reminders", draft("remind_before", strings.Split("1h,2h,3h,4h,5h,6h,7h,8h,9h,10h,11h", ",")), "", ErrBadAnswer},
		{"500", assistanttest.Answer{Status: 500}, "", ErrUnavailable},
		{"503", assistanttest.Answer{Status: 503}, "", ErrUnavailable},
		{"429", assistanttest.Answer{Status: 429}, "", ErrRateLimited},
		{"wrong key", assistanttest.JSON(map[string]any{"action": "list"}), "sk-wrong-5544332211009988", ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := assistanttest.New(t, testKey)
			m.Answer(tt.answer)
			key := testKey
			if tt.key != "" {
				key = tt.key
			}
			s, err := newClient(t, m, key, 0).Interpret(context.Background(), conversation.Ask{Text: "watch it", Lang: "en"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Interpret = %+v, %v; want %v", s, err, tt.want)
			}
			assertSecretFree(t, err.Error(), key, m.URL)
		})
	}
}

func TestInterpret_TimeoutIsUnavailable(t *testing.T) {
	m := assistanttest.New(t, testKey)
	m.Answer(assistanttest.Answer{Hang: true})
	_, err := newClient(t, m, testKey, 50*time.Millisecond).Interpret(context.Background(), conversation.Ask{Text: "x"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want unavailable: timed out", err)
	}
	assertSecretFree(t, err.Error(), testKey, m.URL)
}

// TestI10_KeyOnlyInTheAuthorizationHeader: the key is in no request line,
// body or other header.
func TestI10_KeyOnlyInTheAuthorizationHeader(t *testing.T) {
	m := assistanttest.New(t, testKey)
	if _, err := newClient(t, m, testKey, 0).Interpret(context.Background(), conversation.Ask{Text: "list my tasks"}); err != nil {
		t.Fatal(err)
	}
	r := m.Last(t)
	if strings.Contains(r.Raw, testKey) || strings.Contains(r.Path, testKey) {
		t.Error("the key is in the request body or path")
	}
	for name, vals := range r.Header {
		if name == "Authorization" {
			continue
		}
		for _, v := range vals {
			if strings.Contains(v, testKey) {
				t.Errorf("the key is in header %s", name)
			}
		}
	}
}

// TestNew_RefusesEndpointsEgressRefuses: the endpoint is held to the rules
// of every outbound address, and the refusal names neither key nor URL.
func TestNew_RefusesEndpointsEgressRefuses(t *testing.T) {
	tests := []struct {
		name         string
		endpoint     string
		allowPrivate bool
		key, model   string
		want         error
	}{
		{"loopback without private networks", "https://127.0.0.1:8443/v1/chat/completions", false, testKey, "m", egress.ErrBlocked},
		{"http to a public host", "http://models.example.com/v1/chat/completions", true, testKey, "m", egress.ErrBadURL},
		{"http loopback without private networks", "http://localhost:8000/v1/chat/completions", false, testKey, "m", egress.ErrBadURL},
		{"other scheme", "ftp://models.example.com/v1", true, testKey, "m", egress.ErrBadURL},
		{"credentials", "https://user:" + testKey + "@models.example.com/v1", false, testKey, "m", egress.ErrBadURL},
		{"private port", "https://models.example.com:8443/v1", false, testKey, "m", egress.ErrBlocked},
		{"no key", "https://models.example.com/v1", false, "", "m", nil},
		{"no model", "https://models.example.com/v1", false, testKey, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{Endpoint: tt.endpoint, APIKey: tt.key, Model: tt.model, Egress: egress.Options{AllowPrivate: tt.allowPrivate}})
			if err == nil {
				t.Fatal("New accepted it")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			assertSecretFree(t, err.Error(), testKey, tt.endpoint)
		})
	}
}

func assertSecretFree(t *testing.T, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%q contains %q", text, s)
		}
	}
	if strings.Contains(text, "127.0.0.1") || strings.Contains(text, "Incorrect API key") {
		t.Errorf("%q names the endpoint or quotes its answer", text)
	}
}
