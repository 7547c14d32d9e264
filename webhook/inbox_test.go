package webhook

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// inboxWith fills principal's inbox with n items ("item 0" oldest) and
// marks the even ones read.
func inboxWith(t *testing.T, ts *testServer, principal string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		_, err := ts.store.Inbox().Append(ctx, store.InboxItem{
			Principal: principal, EffectKey: fmt.Sprintf("fx_%s_%d", principal, i), Title: fmt.Sprintf("item %d", i),
			Body: fmt.Appendf(nil, `{"kind":"inbound.event","title":"item %d"}`, i), CreatedAt: t0.Add(time.Duration(i) * time.Minute),
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := ts.store.Inbox().List(ctx, principal, store.InboxQuery{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range list {
		var i int
		fmt.Sscanf(it.Title, "item %d", &i)
		if i%2 == 0 {
			if _, err := ts.store.Inbox().MarkRead(ctx, principal, it.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func titles(res response) []string {
	var out []string
	items, _ := res.body["items"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		out = append(out, fmt.Sprint(m["title"]))
	}
	return out
}

func TestInboxAPI(t *testing.T) {
	ts := newTestServer(t, serverConfig{})
	ctx := context.Background()
	tokens := InboxTokens{KV: ts.store.Channels()}
	alice, err := tokens.Issue(ctx, "telegram:10001")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := tokens.Issue(ctx, "feishu:ou_bob")
	if err != nil {
		t.Fatal(err)
	}
	inboxWith(t, ts, "telegram:10001", 7)
	inboxWith(t, ts, "feishu:ou_bob", 1)

	t.Run("credentials", func(t *testing.T) {
		for name, h := range map[string]http.Header{
			"none":        nil,
			"wrong":       {"Authorization": {"Bearer hin_" + "00112233445566778899aabbccddeeff0011223344556677"}},
			"not hin_":    {"Authorization": {"Bearer " + alice[4:]}},
			"no Bearer":   {"Authorization": {alice}},
			"admin token": {"Authorization": {"Bearer " + adminToken}},
		} {
			if res := ts.do("GET", "/api/v1/inbox", h, nil); res.status != http.StatusUnauthorized || res.code() != "unauthorized" {
				t.Errorf("%s: status %d code %q", name, res.status, res.code())
			}
		}
		if res := ts.do("POST", "/api/v1/inbox", bearer(alice), nil); res.status != http.StatusMethodNotAllowed {
			t.Errorf("POST: %d", res.status)
		}
	})

	t.Run("paging", func(t *testing.T) {
		var got []string
		before := ""
		for page := 0; ; page++ {
			res := ts.do("GET", "/api/v1/inbox?limit=3&before="+before, bearer(alice), nil)
			if res.status != http.StatusOK || res.body["principal"] != "telegram:10001" {
				t.Fatalf("page %d: %d %s", page, res.status, res.raw)
			}
			got = append(got, titles(res)...)
			before, _ = res.body["next_before"].(string)
			if before == "" {
				break
			}
			if page > 5 {
				t.Fatal("paging does not end")
			}
		}
		want := []string{"item 6", "item 5", "item 4", "item 3", "item 2", "item 1", "item 0"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pages %v, want %v", got, want)
		}
	})

	t.Run("unread", func(t *testing.T) {
		res := ts.do("GET", "/api/v1/inbox?unread=1", bearer(alice), nil)
		if got := fmt.Sprint(titles(res)); got != "[item 5 item 3 item 1]" {
			t.Errorf("unread items %s", got)
		}
		if res.body["unread"] != float64(3) {
			t.Errorf("unread count %v", res.body["unread"])
		}
		items := res.body["items"].([]any)
		first := items[0].(map[string]any)
		msg, _ := first["message"].(map[string]any)
		if first["read"] != false || msg["title"] != "item 5" || first["created_at"] != "2026-11-02T09:05:00Z" {
			t.Errorf("item %v", first)
		}
	})

	t.Run("one principal per token", func(t *testing.T) {
		res := ts.do("GET", "/api/v1/inbox", bearer(bob), nil)
		if res.body["principal"] != "feishu:ou_bob" || fmt.Sprint(titles(res)) != "[item 0]" {
			t.Errorf("bob sees %s", res.raw)
		}
	})

	t.Run("limit bounds", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=-1", "limit=1000", "limit=x"} {
			res := ts.do("GET", "/api/v1/inbox?"+q, bearer(alice), nil)
			if res.status != http.StatusOK || len(titles(res)) != 7 {
				t.Errorf("%s: %d, %d items", q, res.status, len(titles(res)))
			}
		}
	})
	assertNoSecrets(t, ts.logs.String(), alice, bob)
}
