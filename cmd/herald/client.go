package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxResponse bounds what the CLI reads from the admin API.
const maxResponse = 16 << 20

// client calls the running service's admin API.
type client struct {
	base, token string
	instance    string // the data dir's identity, from the access record
	hc          *http.Client
}

// errNotRunning means no service answers for the data dir.
var errNotRunning = errors.New("herald is not running")

// apiError is an error the service answered with.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Message }

func dial(e *env) (*client, error) {
	rec, err := e.findService()
	if err != nil {
		return nil, errNotRunning
	}
	scheme := rec.Scheme
	if scheme == "" {
		scheme = "http"
	}
	tr := &http.Transport{Proxy: nil}
	if scheme == "https" {
		tr.TLSClientConfig = insecureLoopbackTLS()
	}
	return &client{
		base: scheme + "://" + rec.Addr + "/admin/v1/", token: rec.Token, instance: rec.Instance,
		hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}, nil
}

// call POSTs in to op and decodes the envelope's result into out.
func (c *client) call(ctx context.Context, op string, in, out any) error {
	status, env, err := postAPI(ctx, c.hc, c.base+op, c.token, in)
	var se *sendError
	switch {
	case errors.As(err, &se):
		if ctx.Err() != nil {
			return fmt.Errorf("the service did not answer in time")
		}
		return fmt.Errorf("%w: %w", errNotRunning, se.err)
	case errors.Is(err, errAnswerTooLarge):
		return fmt.Errorf("the service's answer is too large")
	case err != nil:
		return err
	case env == nil || env.OK == nil:
		return fmt.Errorf("unexpected answer from the service (HTTP %d)", status)
	}
	if !*env.OK {
		if env.Error == nil {
			return &apiError{Status: status, Code: "unknown", Message: fmt.Sprintf("failed (HTTP %d)", status)}
		}
		return &apiError{Status: status, Code: env.Error.Code, Message: env.Error.Message}
	}
	if status != http.StatusOK {
		return fmt.Errorf("unexpected HTTP %d from the service", status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return fmt.Errorf("unexpected answer shape: %w", err)
	}
	return nil
}

// envelope is how the admin and agent APIs answer.
type envelope struct {
	OK     *bool           `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// sendError: the request got no answer.
type sendError struct{ err error }

func (e *sendError) Error() string { return e.err.Error() }

// readError: the answer could not be read.
type readError struct{ err error }

func (e *readError) Error() string { return "read answer: " + e.err.Error() }

// errAnswerTooLarge: the answer is over maxResponse.
var errAnswerTooLarge = errors.New("answer too large")

// postAPI POSTs in as JSON to url with the bearer token and reads the
// answer: its status, and its envelope (nil when the body is not one). A
// round trip without an answer is a *sendError; an answer that could not
// be read is a *readError, or errAnswerTooLarge.
func postAPI(ctx context.Context, hc *http.Client, url, token string, in any) (int, *envelope, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, &sendError{err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return resp.StatusCode, nil, &readError{err}
	}
	if len(raw) > maxResponse {
		return resp.StatusCode, nil, errAnswerTooLarge
	}
	var env envelope
	if json.Unmarshal(raw, &env) != nil {
		return resp.StatusCode, nil, nil
	}
	return resp.StatusCode, &env, nil
}

// do runs op with a deadline and maps errors to exit codes, printing them.
func (e *env) do(op string, in, out any, timeout time.Duration) int {
	return e.fail(e.try(op, in, out, timeout))
}

// try runs op with a deadline; its errors say plainly what was not found.
func (e *env) try(op string, in, out any, timeout time.Duration) error {
	c, err := dial(e)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err = c.call(ctx, op, in, out)
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == "not_found" {
		if msg := notFound(op, in); msg != "" {
			ae.Message = msg
		}
	}
	return err
}

// notFound says plainly what op did not find, from its input.
func notFound(op string, in any) string {
	raw, _ := json.Marshal(in)
	var f map[string]any
	_ = json.Unmarshal(raw, &f)
	str := func(k string) string { s, _ := f[k].(string); return s }
	switch op {
	case "ledger.redeliver":
		return "no effect " + str("key")
	case "inbox.read":
		return fmt.Sprintf("no inbox item %s for %s", str("id"), str("principal"))
	case "ledger.show":
		return "no task, request or inbound hook named " + str("task")
	}
	return ""
}

// Error codes of the CLI's own failures (the service's codes pass through).
const (
	codeUsage      = "usage"
	codeNotRunning = "not_running"
	codeFailure    = "failed"
)

// printError writes one error to stderr: as {"error":{"code","message"}}
// with --json, else as a line of text.
func (e *env) printError(code, msg string) {
	if e.json {
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
		fmt.Fprintln(e.stderr, string(b))
		return
	}
	fmt.Fprintln(e.stderr, msg)
}

func (e *env) fail(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errNotRunning):
		where := strings.Join(e.looked, " and ")
		if where == "" {
			where = e.dataDir
		}
		msg := fmt.Sprintf("herald is not running (looked in data dir %s).\nStart it with 'make run' or 'herald serve --config FILE --data-dir DIR', or name its data dir with --data-dir DIR.", where)
		e.printError(codeNotRunning, msg)
		return exitNotRunning
	}
	var ae *apiError
	if errors.As(err, &ae) {
		e.printError(ae.Code, "herald: "+ae.Message)
		return exitFailure
	}
	e.printError(codeFailure, "herald: "+err.Error())
	return exitFailure
}
