package robot_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/robot"
)

var codes = map[int]robot.Code{
	45009:  {Reason: "rate_limited", TooFast: true},
	93000:  {Reason: "bad_key", BadCredential: true},
	460101: {Reason: "too_large"},
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status      int
		body        string
		result      delivery.Result
		reason      string
		unreachable bool
	}{
		{200, `{"errcode":0,"errmsg":"ok"}`, delivery.Completed, "", false},
		{200, `{"errcode":45009,"errmsg":"api freq out of limit"}`, delivery.RetryAfter, "rate_limited", false},
		{200, `{"errcode":93000,"errmsg":"invalid webhook url"}`, delivery.Failed, "bad_key", true},
		{200, `{"errcode":460101,"errmsg":"message too long"}`, delivery.Failed, "too_large", false},
		{200, `{"errcode":40035}`, delivery.Failed, "code_40035", false},
		// 200 without an errcode: the robot may have posted it.
		{200, `<html>ok</html>`, delivery.Unknown, "bad_response", false},
		{200, `{"errmsg":"ok"}`, delivery.Unknown, "bad_response", false},
		{429, ``, delivery.RetryAfter, "rate_limited", false},
		{502, `bad gateway`, delivery.Unknown, "http_502", false},
		{404, `{"errcode":0}`, delivery.Failed, "http_404", false},
		{302, ``, delivery.Failed, "http_302", false},
	} {
		out := robot.Classify(tc.status, []byte(tc.body), codes)
		if out.Result != tc.result || out.Reason != tc.reason || out.Unreachable != tc.unreachable {
			t.Errorf("%d %s: %+v, want %v %q unreachable=%v", tc.status, tc.body, out, tc.result, tc.reason, tc.unreachable)
		}
		if out.Result == delivery.RetryAfter && out.After != robot.TooFastWait {
			t.Errorf("%d %s: wait %v", tc.status, tc.body, out.After)
		}
	}
}

// FuzzClassify: any answer classifies without panic, and only HTTP 200
// with errcode 0 completes a push.
func FuzzClassify(f *testing.F) {
	f.Add(200, []byte(`{"errcode":0,"errmsg":"ok"}`))
	f.Add(200, []byte(`{"errcode":"0"}`))
	f.Add(500, []byte(`{"errcode":0}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		out := robot.Classify(status, body, codes)
		if out.Result == delivery.Completed && status != http.StatusOK {
			t.Fatalf("HTTP %d completed", status)
		}
		if out.Result == 0 || out.Reason == "" && out.Result != delivery.Completed {
			t.Fatalf("unclassified: %+v", out)
		}
	})
}

// TestI10_SecretsCoverQueryValuesAlone: a key or token is redacted
// wherever it appears, in a URL, encoded or on its own.
func TestI10_SecretsCoverQueryValuesAlone(t *testing.T) {
	const tok = "a1b2+c3d4/e5f6"
	hook := "https://oapi.dingtalk.com/robot/send?access_token=" + url.QueryEscape(tok)
	secrets := robot.Secrets(hook, "SECsigning")
	err := &url.Error{Op: "Post", URL: hook + "&timestamp=1&sign=x", Err: errors.New("token " + tok + " refused; SECsigning; " + url.QueryEscape(tok))}
	msg := robot.Redact(err, secrets)
	for _, leak := range []string{tok, url.QueryEscape(tok), "SECsigning", "access_token="} {
		if strings.Contains(msg, leak) {
			t.Errorf("%q carries %q", msg, leak)
		}
	}
	if !strings.Contains(msg, "refused") {
		t.Errorf("redaction lost the message: %q", msg)
	}
}
