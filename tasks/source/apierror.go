package source

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/watch"
)

// apiError recognises an API error delivered with HTTP 200: a JSON object
// where items were expected, shaped like {"error":…}, {"code":401,…},
// {"errors":[{"message":…}]} or {"message":"Requires authentication"}.
// Such a body is a failure, never an empty list (docs/sources.md, What counts as news).
func apiError(kind string, spec watch.Spec, body []byte) error {
	b := bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !gjson.ValidBytes(b) {
		return nil
	}
	doc := gjson.ParseBytes(b)
	var missing error
	if k, ok := Lookup(kind); ok && k.JSONObject != nil {
		var own bool
		if own, missing = k.JSONObject(doc, spec); own {
			return nil
		}
	}
	var msg string
	code := int64(0)
	isErr := false
	if c := doc.Get("code"); c.Type == gjson.Number {
		code = c.Int()
		isErr = code >= 400 && code < 600
	}
	if c := doc.Get("status"); c.Type == gjson.Number && c.Int() >= 400 && c.Int() < 600 {
		code, isErr = c.Int(), true
	}
	if e := doc.Get("error"); e.Exists() && e.Type != gjson.Null && e.Type != gjson.False && e.String() != "" {
		isErr = true
		msg = firstString(e.Get("message"), e.Get("description"), e)
		if c := e.Get("code"); c.Type == gjson.Number && code == 0 {
			code = c.Int()
		}
	}
	if es := doc.Get("errors"); es.IsArray() && len(es.Array()) > 0 {
		isErr = true
		first := es.Array()[0]
		msg = firstString(first.Get("message"), first.Get("detail"), first)
	}
	if m := doc.Get("message"); m.Type == gjson.String {
		if msg == "" {
			msg = m.String()
		}
		// A bare {"message": …} envelope (GitHub style) has nothing else of substance.
		n := 0
		doc.ForEach(func(k, _ gjson.Result) bool { n++; return true })
		if n <= 3 {
			isErr = true
		}
	}
	if !isErr {
		return missing
	}
	return watch.Errorf(apiClass(code, msg), "API error in HTTP 200 response: %s", truncate(normSpace(msg), 120))
}

func firstString(rs ...gjson.Result) string {
	for _, r := range rs {
		if r.Type == gjson.String && r.String() != "" {
			return r.String()
		}
	}
	return ""
}

// apiClass classifies an API error by its code, else by its wording.
func apiClass(code int64, msg string) watch.Class {
	switch {
	case code == 401:
		return watch.Auth
	case code == 403:
		return watch.Permission
	case code == 404 || code == 410:
		return watch.NotFound
	case code == 429 || code >= 500 && code < 600:
		return watch.Transient
	}
	m := strings.ToLower(msg)
	for _, w := range []string{"unauthenticated", "not authenticated", "authentication", "authoriz", "credential", "token", "login", "log in", "sign in", "api key", "apikey"} {
		if strings.Contains(m, w) {
			return watch.Auth
		}
	}
	for _, w := range []string{"forbidden", "permission", "access denied", "not allowed"} {
		if strings.Contains(m, w) {
			return watch.Permission
		}
	}
	for _, w := range []string{"rate limit", "too many requests", "temporarily", "try again"} {
		if strings.Contains(m, w) {
			return watch.Transient
		}
	}
	if strings.Contains(m, "not found") {
		return watch.NotFound
	}
	return watch.Schema
}
