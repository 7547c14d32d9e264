package source

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// pagedKind reads a JSON array per page and follows Link rel="next" until
// it is absent: the shape of a paginated API.
var pagedKind = kind.Kind{
	Name:   "paged",
	Accept: "application/json",
	Run: func(ctx context.Context, g kind.Getter, in kind.Input) ([]watch.Item, error) {
		var items []watch.Item
		next := in.URL
		for next != nil {
			doc, err := g.Do(ctx, kind.Request{URL: next})
			if err != nil {
				return nil, err
			}
			for _, r := range gjson.ParseBytes(doc.Body).Array() {
				items = append(items, watch.Item{ID: r.Get("id").String(), Title: r.Get("title").String()})
			}
			next = nil
			for _, part := range strings.Split(doc.Header.Get("Link"), ",") {
				if u, ok := strings.CutSuffix(strings.TrimSpace(part), `>; rel="next"`); ok {
					if next, err = doc.URL.Parse(strings.TrimPrefix(u, "<")); err != nil {
						return nil, err
					}
				}
			}
		}
		return items, nil
	},
}

// withKind adds k to the table for the length of the test.
func withKind(t *testing.T, k kind.Kind) {
	t.Helper()
	saved := registry
	registry = append(slices.Clip(registry), k)
	t.Cleanup(func() { registry = saved })
}

// pages serves n pages of one item each; failAt answers that page with
// status instead.
func pages(t *testing.T, n, failAt, status int) *url.URL {
	t.Helper()
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p int
		fmt.Sscanf(r.URL.Query().Get("page"), "%d", &p)
		if p == failAt {
			w.WriteHeader(status)
			return
		}
		if p < n {
			w.Header().Set("Link", fmt.Sprintf(`<%s?page=%d>; rel="next"`, r.URL.Path, p+1))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"id":"a%d","title":"Page %d"}]`, p, p)
	}))
	u, _ := url.Parse(srv.URL + "/api/items?page=1")
	return u
}

func TestI7_SeveralRequestKindYieldsEveryPage(t *testing.T) {
	withKind(t, pagedKind)
	u := pages(t, 3, 0, 0)
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: "paged", URL: u.String()}, Options{}))
	if res.Kind != "paged" || len(res.Items) != 3 || res.Items[2].ID != "a3" {
		t.Fatalf("result = %+v, want three items a1..a3 of kind paged", res)
	}
}

func TestI7_SeveralRequestKindFailsWholeWhenAPageFails(t *testing.T) {
	withKind(t, pagedKind)
	u := pages(t, 3, 2, http.StatusServiceUnavailable)
	res, err := fetch(t, newTestSource(t, watch.Spec{Kind: "paged", URL: u.String()}, Options{}))
	wantClass(t, err, watch.Transient)
	if len(res.Items) != 0 {
		t.Fatalf("a failed run kept %d items", len(res.Items))
	}
}

func TestI7_SeveralRequestKindIsBoundedByMaxItems(t *testing.T) {
	withKind(t, pagedKind)
	u := pages(t, 3, 0, 0)
	_, err := fetch(t, newTestSource(t, watch.Spec{Kind: "paged", URL: u.String()}, Options{MaxItems: 2}))
	wantClass(t, err, watch.TooLarge)
}

func TestI8_SeveralRequestKindStaysInScope(t *testing.T) {
	out := kind.Kind{Name: "elsewhere", Run: func(ctx context.Context, g kind.Getter, in kind.Input) ([]watch.Item, error) {
		_, err := g.Do(ctx, kind.Request{URL: &url.URL{Scheme: "http", Host: "other.example", Path: "/"}})
		return nil, err
	}}
	withKind(t, out)
	u := pages(t, 1, 0, 0)
	_, err := fetch(t, newTestSource(t, watch.Spec{Kind: "elsewhere", URL: u.String()}, Options{}))
	wantClass(t, err, watch.Scope)
}

func TestSeveralRequestKindSendsAForm(t *testing.T) {
	var got url.Values
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		_ = r.ParseForm()
		got = r.PostForm
		fmt.Fprint(w, `{"events":[]}`)
	}))
	post := kind.Kind{Name: "form", Run: func(ctx context.Context, g kind.Getter, in kind.Input) ([]watch.Item, error) {
		_, err := g.Do(ctx, kind.Request{Method: http.MethodPost, URL: in.URL, Form: url.Values{"wsfunction": {"list"}}})
		return nil, err
	}}
	withKind(t, post)
	mustFetch(t, newTestSource(t, watch.Spec{Kind: "form", URL: srv.URL + "/ws"}, Options{}))
	if got.Get("wsfunction") != "list" {
		t.Fatalf("form = %v", got)
	}
}

func TestAPIErrorInAPageFailsTheRun(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"errors":[{"message":"Invalid access token."}]}`)
	}))
	withKind(t, pagedKind)
	_, err := fetch(t, newTestSource(t, watch.Spec{Kind: "paged", URL: srv.URL + "/api"}, Options{}))
	wantClass(t, err, watch.Auth)
}
