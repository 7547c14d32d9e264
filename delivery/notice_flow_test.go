package delivery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/delivery/inbox"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/telegram"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// page is a department's notice page served on loopback; set changes
// what it serves from the next request on.
type page struct {
	*httptest.Server
	mu   sync.Mutex
	body string
}

func newPage(t *testing.T, body string) *page {
	p := &page{body: body}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(p.body))
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *page) set(body string) {
	p.mu.Lock()
	p.body = body
	p.mu.Unlock()
}

const (
	pageBefore = `<html><body><ul class="notices">
<li><h3>Final exam</h3><p>Room 101</p><p>Monday 9:00</p><a href="/n/exam">details</a></li>
</ul></body></html>`
	pageAfter = `<html><body><ul class="notices">
<li><h3>Final exam</h3><p>Room 204</p><p>Monday 9:00</p><p>Bring your student card</p><a href="/n/exam">details</a></li>
</ul></body></html>`
)

// runPage creates a task watching the page for recipients and returns a
// function that runs it once through the real source reader.
func (r *rig) runPage(p *page, name string, notify ...string) (string, func() tasks.RunRecord) {
	r.t.Helper()
	ctx := context.Background()
	tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://dept.example.edu/notices",
		Kind: source.KindHTML, Selector: "ul.notices > li", Name: name, Notify: []string{"ops"}})
	if err != nil {
		r.t.Fatal(err)
	}
	// The recipients the test routes, as an admin's config would name them.
	if _, err := r.m.Update(ctx, tk.ID, func(t *tasks.Task) error { t.Notify = notify; return nil }); err != nil {
		r.t.Fatal(err)
	}
	src, err := source.New(watch.Spec{Kind: source.KindHTML, URL: p.URL, Selector: "ul.notices > li"}, source.Options{AllowPrivate: true})
	if err != nil {
		r.t.Fatal(err)
	}
	r.source = src
	l, err := r.st.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-a", time.Hour)
	if err != nil {
		r.t.Fatal(err)
	}
	o := &jobOwner{fence: store.Fence{Lease: l.Name, Epoch: l.Epoch}}
	return tk.ID, func() tasks.RunRecord {
		r.clock.Advance(time.Minute)
		return r.eng.Runner.Run(ctx, scheduler.Job{TaskID: tk.ID, Due: scheduler.Check, Fence: o.fence, Owner: o})
	}
}

// changePushes are the task's change pushes in the ledger.
func (r *rig) changePushes(taskID string) []store.Effect {
	r.t.Helper()
	fxs, err := r.st.Ledger().List(context.Background(), taskID, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return slices.DeleteFunc(fxs, func(fx store.Effect) bool { return fx.Kind != delivery.KindChanged })
}

// A change on a watched page reaches a webhook recipient with the item's
// summary and the lines it gained and lost; the baseline before it
// pushed no item (I2).
func TestWebhookBody_CarriesSummaryAndDiff(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	p := newPage(t, pageBefore)
	id, run := r.runPage(p, "", "ops")
	if rec := run(); rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("first run %s %s, want the baseline", rec.Outcome, rec.Error)
	}
	if fxs := r.changePushes(id); len(fxs) != 0 {
		t.Fatalf("I2: the baseline claimed %d change pushes", len(fxs))
	}
	p.set(pageAfter)
	if rec := run(); rec.Changed != 1 {
		t.Fatalf("second run: %+v, want one change", rec)
	}
	fxs := r.changePushes(id)
	if len(fxs) != 1 {
		t.Fatalf("%d change pushes, want 1", len(fxs))
	}
	r.start(webhookRoute(t, rv, false), "w", nil)
	r.settled(fxs[0].Key, store.Completed)

	var body struct {
		Type string `json:"type"`
		Task struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"task"`
		Items []struct {
			Title   string `json:"title"`
			Change  string `json:"change"`
			Summary string `json:"summary"`
			Diff    struct {
				Added   []string `json:"added"`
				Removed []string `json:"removed"`
			} `json:"diff"`
		} `json:"items"`
	}
	var raw []byte
	for _, h := range rv.received() {
		if h.ID == fxs[0].Key {
			raw = h.Body
		}
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("body %s: %v", raw, err)
	}
	if body.Type != delivery.KindChanged || len(body.Items) != 1 {
		t.Fatalf("body %s", raw)
	}
	it := body.Items[0]
	if it.Title != "Final exam" || it.Change != "changed" ||
		it.Summary != "Room 204 Monday 9:00 Bring your student card details" {
		t.Errorf("item %+v", it)
	}
	if !slices.Equal(it.Diff.Added, []string{"Room 204", "Bring your student card"}) || !slices.Equal(it.Diff.Removed, []string{"Room 101"}) {
		t.Errorf("diff added %q removed %q", it.Diff.Added, it.Diff.Removed)
	}
	if body.Task.Name == body.Task.ID || body.Task.Name != "dept.example.edu" {
		t.Errorf("task named %q (id %s), want the page's host, never the id", body.Task.Name, body.Task.ID)
	}
}

// recipients routes named recipients, each with its own format or
// template, to the fake Telegram API (chat 42) and to an inbox.
func layoutRoutes(t *testing.T, api string, st store.Store, routes map[string]delivery.Route) *delivery.Table {
	t.Helper()
	tg, err := telegram.New(botToken, api, telegram.WithLimits(telegram.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf}))
	if err != nil {
		t.Fatal(err)
	}
	in := inbox.New(st.Inbox())
	named := map[string]delivery.Route{}
	for name, rt := range routes {
		rt.Sink, rt.To = tg, delivery.Address{Kind: delivery.TelegramChat, ID: "42", Name: name}
		if strings.HasPrefix(name, "inbox") {
			rt.Sink, rt.To = in, delivery.Address{Kind: delivery.InboxAddr, ID: "console:alice", Name: name}
		}
		named[name] = rt
	}
	return delivery.NewTable(delivery.TableConfig{Named: named})
}

// Each recipient gets the same change in its own layout: the full
// default, titles only, links only, its own template (winning over the
// task's), the task's template, and a template that fails at run time,
// which still sends, in the default layout.
func TestFormatsAndTemplates_PerRecipient(t *testing.T) {
	routes := map[string]delivery.Route{
		"full":       {},
		"titles":     {Format: delivery.FormatTitle},
		"links":      {Format: delivery.FormatLink},
		"own":        {Template: `{{.task | upper}}{{range .items}} | {{.change}}: {{.title}} — {{trunc 12 .summary}} (+{{join ", +" .diff.added}}){{end}}`},
		"tasks":      {},
		"broken":     {Template: `{{.task}}: {{index .items 7}}`},
		"inbox-tmpl": {Template: `{{.task}} at {{.occurred_at | date "15:04"}}{{range .items}} / {{.title}}{{end}}`},
	}
	for name, want := range map[string][]string{
		"full":   {"1 change in Exams", "[changed]", "Final exam", "Room 204 Monday 9:00", "+ Room 204", "- Room 101"},
		"titles": {"1 change in Exams", "[changed]", "Final exam"},
		"links":  {"1 change in Exams", "/n/exam"},
		"own":    {"EXAMS | changed: Final exam — Room 204 Mo… (+Room 204, +Bring your student card)"},
		"tasks":  {"Exams: Final exam"},
		"broken": {"1 change in Exams", "Final exam", "Room 204 Monday 9:00"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			api := newFakeBotAPI(t)
			p := newPage(t, pageBefore)
			id, run := r.runPage(p, "Exams", name)
			if name == "tasks" || name == "own" { // a task's template; a recipient's own wins
				if _, err := r.m.Update(context.Background(), id, func(t *tasks.Task) error {
					t.Template = `{{.task}}: {{range .items}}{{.title}}{{end}}`
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			run()
			p.set(pageAfter)
			run()
			fxs := r.changePushes(id)
			if len(fxs) != 1 {
				t.Fatalf("%d change pushes, want 1", len(fxs))
			}
			r.start(layoutRoutes(t, api.URL, r.st, routes), "w", nil)
			r.settled(fxs[0].Key, store.Completed)
			r.settled(r.noticeKey(id), store.Completed)
			sent := slices.DeleteFunc(api.sent(), func(s string) bool { return strings.HasPrefix(s, "<b>Watching</b>") })
			if len(sent) != 1 {
				t.Fatalf("Telegram got %d messages, want 1: %q", len(sent), sent)
			}
			for _, w := range want {
				if !strings.Contains(sent[0], render.EscapeHTML(w)) {
					t.Errorf("message %q lacks %q", sent[0], w)
				}
			}
			switch name {
			case "titles", "links":
				if strings.Contains(sent[0], "Room 204") {
					t.Errorf("format %s shows the summary: %q", name, sent[0])
				}
			}
			if name == "links" && strings.Contains(sent[0], "Final exam") {
				t.Errorf("format link shows the title: %q", sent[0])
			}
		})
	}

	t.Run("inbox keeps the template's text", func(t *testing.T) {
		r := newRig(t)
		api := newFakeBotAPI(t)
		p := newPage(t, pageBefore)
		id, run := r.runPage(p, "Exams", "inbox-tmpl")
		run()
		p.set(pageAfter)
		run()
		fxs := r.changePushes(id)
		r.start(layoutRoutes(t, api.URL, r.st, routes), "w", nil)
		r.settled(fxs[0].Key, store.Completed)
		items, err := r.st.Inbox().List(context.Background(), "console:alice", store.InboxQuery{})
		if err != nil || len(items) == 0 {
			t.Fatalf("inbox: %v, %d items", err, len(items))
		}
		var titles []string
		for _, it := range items {
			titles = append(titles, it.Title)
		}
		if !slices.Contains(titles, "Exams at 23:02 / Final exam") {
			t.Errorf("inbox titles %q, want the template's headline", titles)
		}
	})
}

// noticeKey is the key of the task's one task.state notice (its baseline).
func (r *rig) noticeKey(taskID string) string {
	r.t.Helper()
	fxs, err := r.st.Ledger().List(context.Background(), taskID, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, fx := range fxs {
		if fx.Kind == delivery.KindState {
			return fx.Key
		}
	}
	r.t.Fatal("no task notice")
	return ""
}

// A template that fails at run time never drops a push: every change
// goes out in the default layout, and the failure is logged once.
func TestTemplateFailure_DefaultLayoutLoggedOnce(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	p := newPage(t, pageBefore)
	routes := map[string]delivery.Route{"failing": {Template: `{{.task}} {{index .items 3}} logged once`}}
	id, run := r.runPage(p, "Exams", "failing")
	run()
	var logs deliverytest.LogBuffer
	r.start(layoutRoutes(t, api.URL, r.st, routes), "w", func(o *delivery.Options) { o.Log = zerolog.New(&logs) })
	for i, body := range []string{pageAfter, strings.Replace(pageAfter, "Room 204", "Room 305", 1)} {
		p.set(body)
		run()
		fxs := r.changePushes(id)
		if len(fxs) != i+1 {
			t.Fatalf("%d change pushes, want %d", len(fxs), i+1)
		}
		for _, fx := range fxs {
			r.settled(fx.Key, store.Completed)
		}
	}
	var changes int
	for _, s := range api.sent() {
		if strings.HasPrefix(s, "<b>1 change in Exams</b>") {
			changes++
		}
	}
	if changes != 2 {
		t.Errorf("Telegram got %d change notices in the default layout, want 2: %q", changes, api.sent())
	}
	if n := strings.Count(logs.String(), "notice template failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "42") {
		t.Errorf("I10: the log names the chat:\n%s", logs.String())
	}
}

// rssWith is an RSS document listing the given guids, newest first.
func rssWith(guids ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Campus News</title>`)
	for _, g := range guids {
		b.WriteString(`<item><guid>` + g + `</guid><title>Post ` + g + `</title><link>https://news.example.edu/` + g + `</link>` +
			`<description>&lt;p&gt;About ` + g + `&lt;/p&gt;</description></item>`)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// A rolling feed's oldest post scrolling off as a new one comes is not
// news: the webhook recipient hears of the new post only, unless the
// task sets notify_removed. Either way the baseline pushed no item (I2)
// and the task is named by the feed's own title.
func TestRemovals_FeedScrollingOffQuietUnlessOptedIn(t *testing.T) {
	for _, optIn := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "notify_removed"}[optIn], func(t *testing.T) {
			r := newRig(t)
			rv := newReceiver(t, nil)
			var mu sync.Mutex
			doc := rssWith("p3", "p2", "p1")
			feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				w.Header().Set("Content-Type", "application/rss+xml")
				_, _ = w.Write([]byte(doc))
			}))
			t.Cleanup(feed.Close)
			ctx := context.Background()
			tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml",
				Kind: source.KindRSS, Notify: []string{"ops"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.m.Update(ctx, tk.ID, func(t *tasks.Task) error { t.NotifyRemoved = optIn; return nil }); err != nil {
				t.Fatal(err)
			}
			src, err := source.New(watch.Spec{Kind: source.KindRSS, URL: feed.URL}, source.Options{AllowPrivate: true})
			if err != nil {
				t.Fatal(err)
			}
			r.source = src
			l, err := r.st.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-a", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			o := &jobOwner{fence: store.Fence{Lease: l.Name, Epoch: l.Epoch}}
			run := func() tasks.RunRecord {
				r.clock.Advance(time.Minute)
				return r.eng.Runner.Run(ctx, scheduler.Job{TaskID: tk.ID, Due: scheduler.Check, Fence: o.fence, Owner: o})
			}
			if rec := run(); rec.Outcome != tasks.OutcomeBaseline {
				t.Fatalf("first run %s", rec.Outcome)
			}
			mu.Lock()
			doc = rssWith("p4", "p3", "p2") // p1 scrolls off the end
			mu.Unlock()
			if rec := run(); rec.New != 1 || rec.Removed != 1 {
				t.Fatalf("second run counted %d new, %d removed; want 1 and 1", rec.New, rec.Removed)
			}
			fxs := r.changePushes(tk.ID)
			r.start(webhookRoute(t, rv, false), "w", nil)
			for _, fx := range fxs {
				r.settled(fx.Key, store.Completed)
			}
			r.settled(r.noticeKey(tk.ID), store.Completed)
			var changes []string
			for _, h := range rv.received() {
				var body struct {
					Type string `json:"type"`
					Task struct {
						Name string `json:"name"`
					} `json:"task"`
					Items []struct {
						ID      string `json:"id"`
						Change  string `json:"change"`
						Summary string `json:"summary"`
					} `json:"items"`
				}
				if err := json.Unmarshal(h.Body, &body); err != nil {
					t.Fatal(err)
				}
				if body.Task.Name != "Campus News" {
					t.Errorf("a %s push names the task %q, want the feed's title", body.Type, body.Task.Name)
				}
				for _, it := range body.Items {
					if body.Type == delivery.KindChanged {
						changes = append(changes, it.Change+" "+it.ID+": "+it.Summary)
					}
				}
			}
			slices.Sort(changes)
			want := []string{"new p4: About p4"}
			if optIn {
				want = []string{"new p4: About p4", "removed p1: About p1"}
			}
			if !slices.Equal(changes, want) {
				t.Errorf("the receiver got %q, want %q", changes, want)
			}
		})
	}
}
