// Package assistant is herald's client for an OpenAI-compatible
// chat-completions endpoint: it asks a model to read one plain-language
// chat message and to answer with one JSON object naming one of a closed
// set of actions (draft a watch request, list my tasks, explain), checks
// that answer, and hands it to the conversation core as a
// conversation.Suggestion. The core checks it again and acts on it; the
// model can never approve, delete or run anything.
//
// The call goes over the egress transport, so the SSRF guard applies to
// the endpoint like any other outbound address. The API key travels only
// in the Authorization header; it is never in an error or a log line (I10).
package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-resty/resty/v2"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

// Defaults and bounds.
const (
	DefaultTimeout = 20 * time.Second
	// MaxResponseBody bounds what is read of the endpoint's answer.
	MaxResponseBody = 64 << 10
	// maxTokens bounds the model's answer; a draft or a short explanation
	// fits well within it.
	maxTokens = 600
	maxURL    = 2048
	maxName   = 80
	maxSched  = 100
	maxBefore = 10
	// MaxPersona bounds the persona text put into every system prompt.
	MaxPersona = 16 << 10
)

// The failure classes of Interpret, for errors.Is.
var (
	// ErrUnavailable: the endpoint could not be reached, timed out, refused
	// the key or failed.
	ErrUnavailable = errors.New("assistant unavailable")
	// ErrRateLimited: the endpoint answered 429.
	ErrRateLimited = errors.New("assistant rate limited")
	// ErrBadAnswer: the endpoint answered, but not with an acceptable
	// suggestion (not JSON, an unknown action, a non-http(s) URL, overlong
	// text, ...).
	ErrBadAnswer = errors.New("assistant gave an unusable answer")
)

// Options configure a Client.
type Options struct {
	// Endpoint is the chat-completions URL, e.g.
	// https://api.openai.com/v1/chat/completions.
	Endpoint string
	// APIKey is sent as "Authorization: Bearer <key>" and nowhere else.
	APIKey string
	Model  string
	// Timeout bounds one call (default 20s).
	Timeout time.Duration
	// Egress is the outbound policy (AllowPrivate mirrors
	// policy.allow_private_networks); its Timeout is replaced by Timeout.
	Egress egress.Options
	// Persona is the admin's description of the assistant's voice
	// (assistant.persona_file), at most MaxPersona bytes. It shapes how
	// the model writes, never what it may do: the answer is checked
	// against the same closed set of actions whatever it says.
	Persona string
}

func (o *Options) validate() error {
	if o.APIKey == "" {
		return errors.New("assistant: an API key is required")
	}
	if strings.ContainsAny(o.APIKey, "\r\n") {
		return errors.New("assistant: the API key has a line break")
	}
	if o.Model == "" {
		return errors.New("assistant: a model is required")
	}
	if len(o.Egress.Trusted) > 0 {
		// A local model server: the dial guard lets exactly the trusted
		// destinations through (and public ones), over http or https.
		u, err := url.Parse(o.Endpoint)
		if err != nil || u.Hostname() == "" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("assistant: endpoint: %w", egress.ErrBadURL)
		}
	} else if err := egress.CheckURL(o.Endpoint, o.Egress.AllowPrivate); err != nil {
		return fmt.Errorf("assistant: endpoint: %w", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if len(o.Persona) > MaxPersona {
		return fmt.Errorf("assistant: the persona is larger than %d bytes", MaxPersona)
	}
	return nil
}

// Client puts chat messages to the model.
type Client struct {
	o    Options
	http *resty.Client
}

var _ conversation.Assistant = (*Client)(nil)

// New returns a Client. Its errors name what is wrong, never the key or
// the endpoint's address.
func New(o Options) (*Client, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	eg := o.Egress
	eg.Timeout = o.Timeout
	hc := egress.Resty(eg)
	hc.SetLogger(quiet{}) // resty's own messages could quote the request
	return &Client{o: o, http: hc}, nil
}

// The chat-completions wire format, as much of it as herald uses.
type (
	chatRequest struct {
		Model          string         `json:"model"`
		Messages       []chatMessage  `json:"messages"`
		ResponseFormat responseFormat `json:"response_format"`
		MaxTokens      int            `json:"max_tokens"`
	}
	chatMessage struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	responseFormat struct {
		Type string `json:"type"`
	}
	chatResponse struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
)

// answer is the JSON object the model is asked for.
type answer struct {
	Action       string   `json:"action"`
	URL          string   `json:"url"`
	Schedule     string   `json:"schedule"`
	Kind         string   `json:"kind"`
	Name         string   `json:"name"`
	RemindBefore []string `json:"remind_before"`
	Text         string   `json:"text"`
	Query        string   `json:"query"`
}

// Interpret asks the model to read a.Text and returns its checked
// suggestion. Errors wrap ErrUnavailable, ErrRateLimited or ErrBadAnswer.
func (c *Client) Interpret(ctx context.Context, a conversation.Ask) (conversation.Suggestion, error) {
	data, err := c.complete(ctx, systemPrompt(a, c.o.Persona), a.Text, maxTokens)
	if err != nil {
		return conversation.Suggestion{}, err
	}
	return parse(data)
}

// complete puts one system and one user message to the model, within the
// client's timeout, and returns the completion's body. Errors wrap
// ErrUnavailable, ErrRateLimited or ErrBadAnswer.
func (c *Client) complete(ctx context.Context, system, user string, tokens int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	body := chatRequest{
		Model: c.o.Model,
		Messages: []chatMessage{
			{Role: "system", Content: system},
			{Role: "user", Content: user},
		},
		ResponseFormat: responseFormat{Type: "json_object"},
		MaxTokens:      tokens,
	}
	resp, err := c.http.R().
		SetContext(ctx).
		SetHeader("Authorization", "Bearer "+c.o.APIKey).
		SetHeader("Content-Type", "application/json").
		SetHeader("Accept", "application/json").
		SetBody(body).
		SetDoNotParseResponse(true).
		Post(c.o.Endpoint)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	raw := resp.RawBody()
	defer raw.Close()
	data, err := io.ReadAll(io.LimitReader(raw, MaxResponseBody+1))
	code := resp.StatusCode()
	switch {
	case code == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w: status 429", ErrRateLimited)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		// The body is never quoted: some providers echo part of the key.
		return nil, fmt.Errorf("%w: the endpoint refused the key (status %d)", ErrUnavailable, code)
	case code < 200 || code > 299:
		return nil, fmt.Errorf("%w: status %d", ErrUnavailable, code)
	case err != nil:
		return nil, transportError(ctx, err)
	case len(data) > MaxResponseBody:
		return nil, fmt.Errorf("%w: answer larger than %d bytes", ErrBadAnswer, MaxResponseBody)
	}
	return data, nil
}

// transportError classifies a failed exchange without its text: a
// *url.Error carries the endpoint's address.
func transportError(ctx context.Context, err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, egress.ErrBlocked):
		return fmt.Errorf("%w: the endpoint's address is not allowed", ErrUnavailable)
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: timed out", ErrUnavailable)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: cancelled", ErrUnavailable)
	case egress.NotSent(err):
		return fmt.Errorf("%w: cannot connect", ErrUnavailable)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%w: request failed", ErrUnavailable)
	}
	return fmt.Errorf("%w: reading the answer failed", ErrUnavailable)
}

// parse reads a chat completion and checks the object in its message.
func parse(data []byte) (conversation.Suggestion, error) {
	var a answer
	if err := decodeContent(data, &a); err != nil {
		return conversation.Suggestion{}, err
	}
	return a.check()
}

// decodeContent reads a chat completion and decodes the JSON object in
// its message into v.
func decodeContent(data []byte, v any) error {
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return fmt.Errorf("%w: not a chat completion", ErrBadAnswer)
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Message.Content == nil {
		return fmt.Errorf("%w: no message", ErrBadAnswer)
	}
	if cr.Choices[0].FinishReason == "length" {
		return fmt.Errorf("%w: the answer was cut off", ErrBadAnswer)
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(*cr.Choices[0].Message.Content)), v); err != nil {
		return fmt.Errorf("%w: the message is not one JSON object of the asked shape", ErrBadAnswer)
	}
	return nil
}

// check turns the model's object into a Suggestion, refusing anything
// outside the closed set of actions and the bounds of each field.
func (a answer) check() (conversation.Suggestion, error) {
	var none conversation.Suggestion
	bad := func(what string) (conversation.Suggestion, error) {
		return none, fmt.Errorf("%w: %s", ErrBadAnswer, what)
	}
	switch a.Action {
	case conversation.SuggestList:
		return conversation.Suggestion{Action: conversation.SuggestList}, nil
	case conversation.SuggestSearch:
		q := strings.TrimSpace(a.Query)
		if q == "" || !oneLine(q) || utf8.RuneCountInString(q) > conversation.MaxQuery {
			return bad("search without words, or too long")
		}
		return conversation.Suggestion{Action: conversation.SuggestSearch, Query: q}, nil
	case conversation.SuggestExplain:
		text := strings.TrimSpace(a.Text)
		if text == "" || !utf8.ValidString(text) {
			return bad("empty explanation")
		}
		if utf8.RuneCountInString(text) > conversation.MaxExplain {
			return bad("explanation too long")
		}
		return conversation.Suggestion{Action: conversation.SuggestExplain, Text: text}, nil
	case conversation.SuggestDraft:
	default:
		return bad("unknown action") // the model's word is not repeated
	}
	d := conversation.Draft{
		URL: strings.TrimSpace(a.URL), Schedule: strings.TrimSpace(a.Schedule),
		Kind: strings.ToLower(strings.TrimSpace(a.Kind)), Name: strings.TrimSpace(a.Name),
	}
	if err := checkURL(d.URL); err != nil {
		return bad(err.Error())
	}
	switch {
	case !oneLine(d.Schedule) || utf8.RuneCountInString(d.Schedule) > maxSched:
		return bad("schedule too long or not one line")
	case !oneLine(d.Name) || utf8.RuneCountInString(d.Name) > maxName:
		return bad("name too long or not one line")
	case len(a.RemindBefore) > maxBefore:
		return bad("too many reminder offsets")
	}
	if !source.Valid(d.Kind) {
		return bad("unknown kind")
	}
	for _, s := range a.RemindBefore {
		before, err := schedule.ParseDuration(strings.TrimSpace(s))
		if err != nil || before <= 0 {
			return bad("unreadable reminder offset")
		}
		d.RemindBefore = append(d.RemindBefore, before)
	}
	return conversation.Suggestion{Action: conversation.SuggestDraft, Draft: d}, nil
}

// checkURL accepts an absolute http(s) URL with a host, without
// credentials, on one line.
func checkURL(raw string) error {
	if raw == "" {
		return errors.New("draft without a URL")
	}
	if len(raw) > maxURL || !oneLine(raw) || strings.ContainsFunc(raw, unicode.IsSpace) {
		return errors.New("draft URL too long or not one word")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("draft URL unreadable")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return errors.New("draft URL is not http or https")
	}
	if u.Hostname() == "" || u.User != nil {
		return errors.New("draft URL without a host or with credentials")
	}
	return nil
}

func oneLine(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// quiet silences resty's logger.
type quiet struct{}

func (quiet) Errorf(string, ...any) {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Debugf(string, ...any) {}

var _ resty.Logger = quiet{}
