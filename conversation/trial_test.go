package conversation

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/source/rsshubtest"
	"github.com/herald-bridge/herald/tasks/source/sourcetest"
)

var _ Trier = sourcetest.Trier{}

// site is a fake web site: each path answers its content type and body.
func site(t *testing.T, pages map[string][2]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if code, err := strconv.Atoi(p[0]); err == nil { // a status instead of a type
			http.Error(w, p[1], code)
			return
		}
		w.Header().Set("Content-Type", p[0])
		_, _ = w.Write([]byte(p[1]))
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	rssType  = "application/rss+xml"
	htmlType = "text/html; charset=utf-8"
)

func rss(titles ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Notices</title>`)
	for i, ti := range titles {
		fmt.Fprintf(&b, "<item><title>%s</title><link>https://news.example.edu/n/%d</link></item>", ti, i)
	}
	b.WriteString("</channel></rss>")
	return b.String()
}

// trialRig is a rig whose requests are tried, with loopback sources allowed.
func trialRig(t *testing.T, instances ...source.Instance) *rig {
	t.Helper()
	p := defaultPolicy()
	p.AllowPrivate = true
	for _, in := range instances {
		p.RSSHub = append(p.RSSHub, in.URL.String())
	}
	r := newRig(t, p)
	r.core.o.Trier = sourcetest.Trier{Instances: instances}
	return r
}

func (r *rig) tasksOf(principal string) []*tasks.Task {
	r.t.Helper()
	list, err := r.m.List(context.Background(), principal)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []*tasks.Task
	for _, tk := range list {
		if tk.Owner == principal {
			out = append(out, tk)
		}
	}
	return out
}

func TestTrial_RequestSaysWhatItFound(t *testing.T) {
	srv := site(t, map[string][2]string{
		"/feed.xml":  {rssType, rss("Exam timetable out", "Library hours", "Welcome week")},
		"/one.xml":   {rssType, rss("Only notice")},
		"/empty.xml": {rssType, rss()},
		"/page":      {htmlType, "<!doctype html><html><body><p>Welcome to the department.</p></body></html>"},
		"/busy":      {"503", "upstream down"},
		"/cal.ics":   {"text/calendar", "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:e1\r\nDTSTART:20261110T090000Z\r\nSUMMARY:Essay due\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"},
	})
	cases := []struct {
		name, say string
		want      []string
		made      bool
	}{
		{"items and the newest", "/watch " + srv.URL + "/feed.xml every 1h", []string{"Tried it: 3 items, the newest “Exam timetable out”.", "Approved"}, true},
		{"one item", "/watch " + srv.URL + "/one.xml every 1h", []string{"Tried it: 1 item, “Only notice”."}, true},
		{"nothing yet", "/watch " + srv.URL + "/empty.xml every 1h", []string{"it lists nothing yet"}, true},
		{"not answering just now", "/watch " + srv.URL + "/busy every 1h", []string{"Tried it, but it did not answer just now (GET " + srv.URL + ": HTTP 503); its checks will keep trying.", "Approved"}, true},
		{"404 said plainly", "/watch " + srv.URL + "/gone.xml every 1h", []string{"404 Not Found"}, false},
		{"a page with no list", "/watch " + srv.URL + "/page every 1h", []string{"no repeated list", "selector"}, false},
		{"a reminder on a feed", "/remind " + srv.URL + "/feed.xml", []string{"no dates here, so a reminder would never fire"}, false},
		{"a reminder on a calendar", "/remind " + srv.URL + "/cal.ics", []string{"Tried it: 1 entry with a due date, due 2026-11-10 09:00 UTC."}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := trialRig(t)
			got := r.say(admin, c.say)
			contains(t, got, c.want...)
			if made := len(r.tasksOf(admin)) == 1; made != c.made {
				t.Fatalf("task made = %v, want %v; reply:\n%s", made, c.made, got)
			}
		})
	}
}

func TestTrial_RequestSaysWhatItFoundInChinese(t *testing.T) {
	srv := site(t, map[string][2]string{"/feed.xml": {rssType, rss("考试安排", "图书馆开放时间")}})
	r := trialRig(t)
	contains(t, r.sayZh(admin, "/关注 "+srv.URL+"/feed.xml 每 1 小时"), "试读成功：共 2 条，最新一条“考试安排”。")
	contains(t, r.sayZh(admin, "/关注 "+srv.URL+"/missing.xml 每 1 小时"), "404 Not Found")
}

func TestTrial_AlreadyWatchedBySamePerson(t *testing.T) {
	srv := site(t, map[string][2]string{"/feed.xml": {rssType, rss("A", "B")}})
	r := trialRig(t)
	first := r.say(admin, "/watch "+srv.URL+"/feed.xml every 1h")
	tk := r.tasksOf(admin)
	if len(tk) != 1 {
		t.Fatalf("first request made %d tasks:\n%s", len(tk), first)
	}
	contains(t, r.say(admin, "/watch "+srv.URL+"/feed.xml every 30m"), "You already watch this as "+tk[0].ID)
	if n := len(r.tasksOf(admin)); n != 1 {
		t.Fatalf("%d tasks after the repeat, want 1", n)
	}
	// Another person may watch it; a pending request is named as such.
	contains(t, r.say(alice, "/watch "+srv.URL+"/feed.xml every 1h"), "awaits")
	contains(t, r.say(alice, "/watch "+srv.URL+"/feed.xml every 1h"), "You already asked for this")
}

// The acceptance path: a page with a relative <link rel=alternate> becomes
// a feed task, chosen by number in the console.
func TestDiscovery_RelativeAlternateLinkBecomesFeedTask(t *testing.T) {
	srv := site(t, map[string][2]string{
		"/dept/":                {htmlType, `<!doctype html><html><head><title>Dept</title><link rel="alternate" type="application/rss+xml" title="Dept notices" href="notices/rss.xml"></head><body><p>hi</p></body></html>`},
		"/dept/notices/rss.xml": {rssType, rss("Seminar moved", "Office hours")},
	})
	r := trialRig(t)
	offer := r.say("console:admin", "/watch "+srv.URL+"/dept/ every 2h")
	contains(t, offer, "advertises feeds", "1. Dept notices — "+srv.URL+"/dept/notices/rss.xml", "as html")
	if n := len(r.tasksOf("console:admin")); n != 0 {
		t.Fatalf("a task was made before a feed was chosen")
	}
	contains(t, r.say("console:admin", "3"), "number from 1 to 1")
	got := r.say("console:admin", "1")
	contains(t, got, "Tried it: 2 items", "Approved")
	tk := r.tasksOf("console:admin")
	if len(tk) != 1 || tk[0].Source.URL != srv.URL+"/dept/notices/rss.xml" || tk[0].Source.Kind != source.KindRSS || tk[0].Schedule != "every 2h" {
		t.Fatalf("tasks = %+v\nreply:\n%s", tk, got)
	}
}

func TestDiscovery_OffersFeedsAsButtons(t *testing.T) {
	srv := site(t, map[string][2]string{
		"/":        {htmlType, `<html><head><link rel="alternate" type="application/atom+xml" title="Atom" href="/atom.xml"><link rel="alternate" type="application/rss+xml" title="RSS" href="/rss.xml"></head></html>`},
		"/rss.xml": {rssType, rss("One")},
	})
	r := trialRig(t)
	m := r.msg(admin, "/watch "+srv.URL+"/ every 1h")
	out := r.core.Handle(context.Background(), m)
	if len(out) != 1 || len(out[0].Buttons) != 2 || out[0].Buttons[1].Action != actionFeed {
		t.Fatalf("offer = %+v", out)
	}
	press := r.msg(admin, "")
	press.Button = &Press{Action: actionFeed, Arg: out[0].Buttons[1].Arg}
	got := r.core.Handle(context.Background(), press)
	if len(got) == 0 || !got[0].Edit || !strings.Contains(got[0].Text, "Approved") {
		t.Fatalf("press = %+v", got)
	}
	if tk := r.tasksOf(admin); len(tk) != 1 || tk[0].Source.URL != srv.URL+"/rss.xml" {
		t.Fatalf("tasks = %+v", tk)
	}
	// The offer is used up.
	again := r.msg(admin, "")
	again.Button = press.Button
	if out := r.core.Handle(context.Background(), again); len(out) != 1 || out[0].Toast == "" {
		t.Fatalf("second press = %+v", out)
	}
}

func TestDiscovery_RadarOffersAnRSSHubRoute(t *testing.T) {
	inst := rsshubtest.New(t, "")
	inst.Route("/ustc/jwc/info", rsshubtest.Item{Title: "选课通知", Link: "https://www.teach.ustc.edu.cn/n/1.html"})
	page := site(t, map[string][2]string{"/info": {htmlType, "<html><body><p>通知公告</p></body></html>"}})
	pu, _ := url.Parse(page.URL)
	inst.Radar(map[string]any{pu.Hostname(): map[string]any{"_name": "教务处", ".": []any{
		map[string]any{"title": "通知公告", "source": []string{"/:category"}, "target": "/ustc/jwc/:category"},
	}}})
	iu, _ := url.Parse(inst.URL)
	r := trialRig(t, source.Instance{URL: iu})
	offer := r.say(admin, "/watch "+page.URL+"/info every 1h")
	contains(t, offer, "RSSHub has routes", "1. 教务处 - 通知公告 — rsshub:/ustc/jwc/info")
	got := r.say(admin, "1")
	contains(t, got, "Tried it: 1 item, “选课通知”.", "rsshub:/ustc/jwc/info")
	tk := r.tasksOf(admin)
	if len(tk) != 1 || tk[0].Source.Kind != source.KindRSSHub || tk[0].Source.Route != "/ustc/jwc/info" {
		t.Fatalf("tasks = %+v\nreply:\n%s", tk, got)
	}
}

func TestRSSHub_WatchRouteInChat(t *testing.T) {
	inst := rsshubtest.New(t, "")
	inst.Route("/ustc/jwc/info", rsshubtest.Item{Title: "放假通知", Link: "https://www.teach.ustc.edu.cn/n/1.html"})
	iu, _ := url.Parse(inst.URL)
	r := trialRig(t, source.Instance{URL: iu})
	contains(t, r.say(admin, "/watch rsshub:/ustc/jwc/info every 1h"), "Tried it: 1 item", "rsshub:/ustc/jwc/info", "Approved")
	contains(t, r.say(admin, "/watch rsshub:/ustc/jwc/nope every 1h"), "404 Not Found")
	contains(t, r.say(admin, "/watch rsshub:/ustc/jwc/info every 2h"), "You already watch this")
	tk := r.tasksOf(admin)
	if len(tk) != 1 || tk[0].Source.URL != inst.URL+"/ustc/jwc/info" {
		t.Fatalf("tasks = %+v", tk)
	}
	// Without an instance the request says so.
	contains(t, trialRig(t).say(admin, "/watch rsshub:/ustc/jwc/info every 1h"), "No RSSHub instance is configured")
}

// One who may not request watches makes herald fetch nothing.
func TestTrial_NotForThoseWhoMayNotRequest(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	r := trialRig(t)
	got := r.say("feishu:ou_stranger", "/watch "+srv.URL+"/feed.xml every 1h")
	if hits.Load() != 0 || strings.Contains(got, "Tried") {
		t.Fatalf("a stranger's request was fetched (%d requests): %s", hits.Load(), got)
	}
}
