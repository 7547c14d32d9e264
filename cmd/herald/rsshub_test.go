package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/tasks/source/rsshubtest"
)

// TestRSSHub_OnePushPerNewItemAndNothingOnAnInstanceMove: an rsshub watch
// asked for in chat, through two fake instances (the second with an
// access key). The first instance failing moves the run to the second
// without a notice; a new item is one push; moving back is quiet too.
func TestRSSHub_OnePushPerNewItemAndNothingOnAnInstanceMove(t *testing.T) {
	const route, key = "/ustc/jwc/info", "rsshub-access-k3y"
	old := []rsshubtest.Item{
		{Title: "关于2027年寒假放假安排的通知", Link: "https://www.teach.ustc.edu.cn/notice/1.html"},
		{Title: "本科生选课系统维护公告", Link: "https://www.teach.ustc.edu.cn/notice/2.html"},
		{Title: "实验室开放时间", Link: route + "#lab"}, // a link on the instance itself
	}
	a, b := rsshubtest.New(t, ""), rsshubtest.New(t, key)
	a.Route(route, old...)
	b.Route(route, old...)
	cfg := localService(freeAddr(t)) + "sources:\n  rsshub:\n    instances:\n      - url: " + a.URL +
		"\n      - url: " + b.URL + "\n        key: ${RSSHUB_KEY}\n" +
		"tasks:\n  - id: jwc\n    source: {kind: rsshub, route: \"" + route + "\"}\n    schedule: every 1h\n    notify: [\"inbox:console:ops\"]\n    owner: console:ops\n"
	p, dataDir := startServe(t, cfg, "RSSHUB_KEY="+key)

	waitBaseline(t, dataDir, "jwc") // the same route declared in the file
	if got := listTasks(t, dataDir)["jwc"]; got.LastOutcome != "baseline" || got.Source.Kind != "rsshub" {
		t.Fatalf("the declared rsshub task = %+v", got)
	}

	out, errOut, code := chatCLI(t, dataDir, "admin", "/watch rsshub:"+route+" every 1h\n")
	tid := reTaskID.FindString(out)
	if code != 0 || tid == "" || !strings.Contains(out, "Tried it: 3 items") {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	waitBaseline(t, dataDir, tid)
	inbox := func() []inboxView {
		var items []inboxView
		cliJSON(t, dataDir, &items, "inbox", "list", "console:admin")
		return items
	}
	eventually(t, "the baseline confirmation arrives", func() bool { return len(inbox()) == 1 })

	quiet := func(what string) {
		t.Helper()
		if out := cli(t, dataDir, "tasks", "run", tid); !strings.Contains(out, "0 new, 0 changed, 0 removed, 0 pushes queued") {
			t.Fatalf("%s: the run says %q, want nothing new and no push", what, out)
		}
	}
	a.Down(http.StatusServiceUnavailable)
	quiet("moving to the second instance")
	if b.Hits(route) == 0 {
		t.Fatal("the run did not move to the second instance")
	}

	b.Route(route, append([]rsshubtest.Item{{Title: "2027年春季学期补考安排", Link: "https://www.teach.ustc.edu.cn/notice/3.html"}}, old...)...)
	if out := cli(t, dataDir, "tasks", "run", tid); !strings.Contains(out, "1 new, 0 changed, 0 removed, 1 pushes queued") {
		t.Fatalf("the run with a new item says %q", out)
	}
	eventually(t, "the new item is pushed", func() bool { return len(inbox()) == 2 })
	quiet("the same items again")
	a.Route(route, append([]rsshubtest.Item{{Title: "2027年春季学期补考安排", Link: "https://www.teach.ustc.edu.cn/notice/3.html"}}, old...)...)
	a.Down(0)
	quiet("moving back to the first instance")
	items := inbox()
	if len(items) != 2 || !strings.Contains(items[0].Title+texts(items), "补考安排") {
		t.Fatalf("inbox = %+v, want the confirmation and one push for the new item", items)
	}
	for i, k := range b.Keys() {
		if k != key {
			t.Errorf("request %d to the keyed instance carried key %q", i, k)
		}
	}
	if strings.Contains(p.log.String(), key) || strings.Contains(out, key) {
		t.Error("the access key appears in the log or the chat (I10)")
	}
}

// TestRSSHub_SelfHostedInstanceReachedWithPrivateNetworksOff: an instance
// on 127.0.0.1 (a self-hosted RSSHub) is reached while private networks
// stay closed to everything else, the same address watched directly
// included.
func TestRSSHub_SelfHostedInstanceReachedWithPrivateNetworksOff(t *testing.T) {
	const route = "/ustc/jwc/info"
	a := rsshubtest.New(t, "")
	a.Route(route, rsshubtest.Item{Title: "选课通知", Link: "https://www.teach.ustc.edu.cn/notice/9.html"})
	cfg := strings.Replace(localService(freeAddr(t)), "allow_private_networks: true", "allow_private_networks: false", 1) +
		"sources:\n  rsshub:\n    instances:\n      - url: " + a.URL + "\n"
	_, dataDir := startServe(t, cfg)
	out, errOut, code := chatCLI(t, dataDir, "admin", "/watch rsshub:"+route+" every 1h\n/watch "+a.URL+route+" every 1h\n")
	tid := reTaskID.FindString(out)
	if code != 0 || tid == "" || !strings.Contains(out, "Tried it: 1 item") || !strings.Contains(out, "loopback") {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	waitBaseline(t, dataDir, tid)
	if got := listTasks(t, dataDir); len(got) != 1 || got[tid].LastOutcome != "baseline" {
		t.Fatalf("tasks = %+v, want the rsshub task alone, with its baseline", got)
	}
}
