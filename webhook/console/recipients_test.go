package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/herald-bridge/herald/delivery"
)

// listedRecipients serves a fixed list and records what it was asked.
type listedRecipients struct {
	rows    []RecipientRow
	mu      sync.Mutex
	enabled []string
}

func (l *listedRecipients) List(context.Context) ([]RecipientRow, error) { return l.rows, nil }

func (l *listedRecipients) Enable(_ context.Context, who, name string) (RecipientRow, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enabled = append(l.enabled, who+" "+name)
	return RecipientRow{Name: name, State: "enabled"}, nil
}

func (l *listedRecipients) Redeliver(context.Context, string, delivery.Range, bool) (RangeResult, error) {
	return RangeResult{}, nil
}

// TestSpec21_I10_ConsoleRecipientsNeverShowAnAddress: the console lists
// a configured recipient by name and a disabled chat only by its kind and
// an opaque id, never its address; Enable with that id turns on the
// chat it stands for.
func TestSpec21_I10_ConsoleRecipientsNeverShowAnAddress(t *testing.T) {
	const chat = "telegram:chat:987654321"
	rs := &listedRecipients{rows: []RecipientRow{{Name: "ops", Kind: "webhook", State: "enabled"},
		{Name: chat, Kind: "telegram", State: "disabled", Reason: "blocked"}}}
	r := newRig(t, Options{Recipients: rs})
	code, _, err := r.sessions.NewCode(context.Background(), "console:admin", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, login := r.do(t, http.MethodPost, "/console/api/login", r.base, `{"code":"`+code+`"}`)
	var sess struct {
		CSRF string `json:"csrf"`
	}
	if err := json.Unmarshal([]byte(login), &sess); err != nil || sess.CSRF == "" {
		t.Fatalf("login: %s", login)
	}
	resp, body := r.do(t, http.MethodGet, "/console/api/recipients", "", "")
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "987654321") || !strings.Contains(body, `"name":"ops"`) {
		t.Fatalf("recipients: %d %s; want ops by name and the chat without its address", resp.StatusCode, body)
	}
	var list struct {
		Recipients []struct{ ID, Name, State string } `json:"recipients"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Recipients) != 2 {
		t.Fatalf("recipients: %s", body)
	}
	id := list.Recipients[1].ID
	req, _ := http.NewRequest(http.MethodPost, r.base+"/console/api/recipients/enable", strings.NewReader(`{"name":"`+id+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", r.base)
	req.Header.Set(csrfHeader, sess.CSRF)
	res, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || len(rs.enabled) != 1 || rs.enabled[0] != "console:admin "+chat {
		t.Errorf("enable by id: %d, enabled %v", res.StatusCode, rs.enabled)
	}
}
