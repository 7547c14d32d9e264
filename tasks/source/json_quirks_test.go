package source

import (
	"net/http"
	"testing"

	"github.com/herald-bridge/herald/tasks/watch"
)

func serveJSON(t *testing.T, body string) string {
	t.Helper()
	return newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})).URL
}

// A URL that returns one object (a "latest release" API) is one item
// without any items path; without a link path the human page wins over
// the API url.
func TestJSON_SingleObjectIsTheItem(t *testing.T) {
	const latest = `{"url":"https://api.code.example.com/repos/acme/widget/releases/77","html_url":"https://code.example.com/acme/widget/releases/tag/v4.0.0",
		"id":77,"tag_name":"v4.0.0","name":"Widget 4","published_at":"2026-11-30T08:00:00Z","body":"Faster widgets."}`
	for _, spec := range []watch.Spec{
		{Kind: KindJSON},
		{},
		{Kind: KindJSON, Items: "@this"},
	} {
		spec.URL = serveJSON(t, latest)
		res := mustFetch(t, newTestSource(t, spec, Options{}))
		if len(res.Items) != 1 {
			t.Fatalf("%+v: %d items", spec, len(res.Items))
		}
		it := res.Items[0]
		if it.ID != "77" || it.Title != "Widget 4" || it.URL != "https://code.example.com/acme/widget/releases/tag/v4.0.0" {
			t.Fatalf("%+v", it)
		}
	}
	// An object at the items path is one item too.
	url := serveJSON(t, `{"data":{"latest":{"id":"n1","title":"Notice"}}}`)
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: url, Items: "data.latest"}, Options{}))
	if len(res.Items) != 1 || res.Items[0].ID != "n1" {
		t.Fatalf("%+v", res.Items)
	}
	// A list still lists; a bare "url" still serves when it is all there is.
	url = serveJSON(t, `[{"id":1,"name":"a","url":"https://x.example/a"},{"id":2,"name":"b","web_url":"https://x.example/b","url":"https://api.x.example/b"}]`)
	res = mustFetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: url}, Options{}))
	if len(res.Items) != 2 || res.Items[0].URL != "https://x.example/a" || res.Items[1].URL != "https://x.example/b" {
		t.Fatalf("%+v", res.Items)
	}
}

// TestI2_JSONRepeatedIDsStayDistinct: elements sharing an id are separate
// items; editing one changes one.
func TestI2_JSONRepeatedIDsStayDistinct(t *testing.T) {
	body := func(third string) string {
		return `[{"id":"x","title":"One","url":"https://x.example/1"},{"id":"x","title":"Two","url":"https://x.example/2"},{"id":"x","title":"Three","url":"https://x.example/3","body":"` + third + `"}]`
	}
	a := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: serveJSON(t, body("v1"))}, Options{}))
	b := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: serveJSON(t, body("v2"))}, Options{}))
	if len(a.Items) != 3 {
		t.Fatalf("%+v", a.Items)
	}
	d1 := watch.Compute(nil, a.Items, quirksNow, watch.Options{})
	d2 := watch.Compute(d1.Next, b.Items, quirksNow, watch.Options{})
	if len(d2.Events) != 1 || d2.Events[0].Kind != watch.EventChanged || d2.Events[0].Item.Title != "Three" {
		t.Fatalf("events %+v", d2.Events)
	}
}

// JSON titles are plain text unless they look like HTML (a CMS's
// "rendered" title with entities).
func TestJSON_TitlesKeepLiteralBrackets(t *testing.T) {
	url := serveJSON(t, `[{"id":1,"title":"Vector<T> is here"},{"id":2,"title":"Tom &amp; Jerry&#8217;s <b>day</b>"}]`)
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: url}, Options{}))
	if res.Items[0].Title != "Vector<T> is here" || res.Items[1].Title != "Tom & Jerry’s day" {
		t.Fatalf("%q %q", res.Items[0].Title, res.Items[1].Title)
	}
}
