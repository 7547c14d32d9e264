package feishu

import (
	"bytes"
	"net/http"
	"testing"
)

func FuzzDecrypt(f *testing.F) {
	f.Add("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=", "test key")
	f.Add("", "")
	f.Add("MDEyMzQ1Njc4OWFiY2RlZg==", "k")
	f.Fuzz(func(t *testing.T, in, key string) {
		plain, err := Decrypt(in, key)
		if err != nil {
			return
		}
		// Whatever opens must seal again to a body that opens the same.
		sealed, err := Encrypt(plain, key, bytes.Repeat([]byte{7}, 16))
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decrypt(sealed, key)
		if err != nil || !bytes.Equal(again, plain) {
			t.Fatalf("round trip: %q, %v; want %q", again, err, plain)
		}
	})
}

// FuzzEventHandler feeds arbitrary bodies to the event endpoint: it must
// never panic, and nothing without the verification token reaches the
// handler.
func FuzzEventHandler(f *testing.F) {
	f.Add(messageEvent(testToken, "ev-f1", "om_f1", chatP2P, "p2p", "/help"))
	f.Add(messageEvent("WRONG", "ev-f2", "om_f2", chatGroup, "group", "@_user_1 hi", mention{"@_user_1", botOpenID, "herald"}))
	f.Add(cardEvent(testToken, "ev-f3", "ou_x", chatGroup, "om_c", map[string]string{"action": "approve", "arg": "r-1"}))
	f.Add([]byte(`{"challenge":"c","token":"` + testToken + `","type":"url_verification"}`))
	f.Add([]byte(`{"schema":"2.0","header":{"event_id":"e","event_type":"im.message.receive_v1","token":"` + testToken + `"},"event":{"message":null}}`))
	f.Add([]byte(`{"encrypt":"abc"}`))
	r := newTestChannel(f, false)
	f.Fuzz(func(t *testing.T, body []byte) {
		before := len(r.h.got())
		w := r.serve(body, nil)
		if w.Code != http.StatusOK && len(r.h.got()) != before {
			t.Fatalf("refused event (%d) reached the handler", w.Code)
		}
		if w.Code == http.StatusOK && !bytes.Contains(body, []byte(testToken)) && !bytes.Contains(body, []byte(`\`)) {
			t.Fatalf("accepted a body without the verification token: %s", w.Body)
		}
	})
}
