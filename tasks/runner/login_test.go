package runner_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/source/browser"
	"github.com/herald-bridge/herald/tasks/source/browser/browsertest"
	"github.com/herald-bridge/herald/tasks/source/portaltest"
	"github.com/herald-bridge/herald/tasks/watch"
)

// portalRig is a runner whose task reads spec on the portal, each run
// opening its source afresh (as a service does) with the session kept
// in the rig's credential store.
func portalRig(t *testing.T, spec watch.Spec, o source.Options) (*rig, *tasks.Task) {
	t.Helper()
	r := newRig(t)
	creds := credentials.New(r.store.Channels())
	r.setSources(tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
		o := o
		o.AllowPrivate = true
		if spec.Auth != nil && spec.Auth.Login != nil {
			o.Session = creds.Slot(spec.Auth.Login.URL, "student")
		}
		return source.New(spec, o)
	}))
	r.setRetryWaits([]time.Duration{0, 0})
	r.own()
	return r, r.activeTask()
}

func casSpec(p *portaltest.Portal, password string) watch.Spec {
	return watch.Spec{Kind: source.KindHTML, URL: p.URL + "/portal/notices", Selector: "li.notice",
		Auth: &watch.SignIn{Login: &watch.Login{URL: p.LoginURL(), Check: "PORTALSESSION",
			Form: map[string]string{"username": portaltest.Account, "password": password}}}}
}

func TestLogin_BaselineQuietNewNoticeOnePushExpiryOneSignIn(t *testing.T) {
	p := portaltest.New("选课通知", "考试安排")
	defer p.Close()
	r, tk := portalRig(t, casSpec(p, portaltest.Password), source.Options{})
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeBaseline || rec.Items != 2 {
		t.Fatalf("baseline run = %+v", rec)
	}
	if fx, _ := r.effects(tk.ID); len(fx) != 0 {
		t.Fatalf("the baseline pushed %d items", len(fx))
	}
	p.Add("放假通知")
	if rec := r.run(tk.ID); rec.New != 1 {
		t.Fatalf("run after a new notice = %+v", rec)
	}
	if fx, _ := r.effects(tk.ID); len(fx) != 1 {
		t.Fatalf("a new notice gave %d pushes, want 1", len(fx))
	}
	if posts, _ := p.Posts(); posts != 1 {
		t.Fatalf("%d sign-ins over two runs, want 1: the session is kept", posts)
	}
	// The portal's sessions time out: the next run signs in again once,
	// and nothing reads as removed or new.
	p.Expire()
	if rec := r.run(tk.ID); rec.Outcome == tasks.OutcomeFailed || rec.Removed != 0 || rec.New != 0 {
		t.Fatalf("run after expiry = %+v", rec)
	}
	if posts, _ := p.Posts(); posts != 2 {
		t.Fatalf("sign-ins after expiry = %d, want 2", posts)
	}
	if fx, _ := r.effects(tk.ID); len(fx) != 1 {
		t.Fatalf("%d pushes after expiry, want still 1", len(fx))
	}
	assertNoSecret(t, r, tk.ID, portaltest.Password, "PORTALSESSION=S-")
}

func TestLogin_WrongPasswordIsAuthWithOneAttemptAndNoPush(t *testing.T) {
	p := portaltest.New("选课通知")
	defer p.Close()
	r, tk := portalRig(t, casSpec(p, "not-the-password"), source.Options{})
	rec := r.run(tk.ID)
	if rec.Class != watch.Auth || rec.Attempts != 1 || rec.Outcome != tasks.OutcomeFailed {
		t.Fatalf("run = %+v, want one attempt classified auth", rec)
	}
	if posts, _ := p.Posts(); posts != 1 {
		t.Fatalf("sign-in forms sent = %d, want 1", posts)
	}
	if fx, _ := r.effects(tk.ID); len(fx) != 0 {
		t.Fatalf("%d pushes", len(fx))
	}
	assertNoSecret(t, r, tk.ID, "not-the-password")
}

func TestLoginPageServedForTheListIsAuthNotRemovals(t *testing.T) {
	p := portaltest.New("选课通知", "考试安排")
	defer p.Close()
	spec := watch.Spec{Kind: source.KindHTML, URL: p.URL + "/portal/cookie/notices", Selector: "li.notice",
		Auth: &watch.SignIn{Cookie: portaltest.Cookie}}
	r, tk := portalRig(t, spec, source.Options{})
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeBaseline || rec.Items != 2 {
		t.Fatalf("baseline = %+v", rec)
	}
	// The cookie stops working: the portal serves its sign-in page.
	spec.Auth.Cookie = "portal_token=revoked"
	rec := r.run(tk.ID)
	if rec.Class != watch.Auth || rec.Removed != 0 {
		t.Fatalf("run = %+v, want auth and no removals", rec)
	}
	if fx, _ := r.effects(tk.ID); len(fx) != 0 {
		t.Fatalf("%d pushes", len(fx))
	}
	assertNoSecret(t, r, tk.ID, "tok-8f2e61c0d9", "revoked")
}

// assertNoSecret fails when a run record, the task or a ledger entry of
// task id holds one of secrets (I10).
func assertNoSecret(t *testing.T, r *rig, id string, secrets ...string) {
	t.Helper()
	ctx := context.Background()
	runs, err := r.m.Runs(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := r.m.Get(ctx, id)
	items, notices := r.effects(id)
	var all []any
	all = append(all, runs, tk.LastError)
	for _, fx := range append(items, notices...) {
		all = append(all, string(fx.Payload), fx.Key, fx.Error)
	}
	b, _ := json.Marshal(all)
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Fatalf("%q appears in the run records or the ledger: %s", s, b)
		}
	}
}

func TestRender_OnePushPerNewItemAndUnrenderedGivesNoFalsePushes(t *testing.T) {
	pool := browsertest.Browser(t, browser.Options{})
	p := portaltest.New("选课通知", "考试安排")
	defer p.Close()
	p.Extra = []string{"http://169.254.169.254/latest/meta-data/"}
	spec := watch.Spec{Kind: source.KindHTML, URL: p.URL + "/portal/js/notices", Selector: "li.notice", Render: watch.RenderBrowser}
	r, tk := portalRig(t, spec, source.Options{Browser: pool})
	rec := r.run(tk.ID)
	if rec.Outcome != tasks.OutcomeBaseline || rec.Items != 2 {
		t.Fatalf("baseline = %+v", rec)
	}
	// The page's attempt at the metadata address is in the run record.
	if len(rec.Blocked) != 1 || !strings.HasPrefix(rec.Blocked[0], "http://169.254.169.254: ") {
		t.Fatalf("blocked = %q", rec.Blocked)
	}
	if runs, _ := r.m.Runs(context.Background(), tk.ID, 1); len(runs) != 1 || len(runs[0].Blocked) != 1 {
		t.Fatalf("the kept run record lost what was blocked: %+v", runs)
	}
	p.Add("放假通知")
	p.Add("讲座预告")
	if rec := r.run(tk.ID); rec.New != 2 {
		t.Fatalf("run = %+v", rec)
	}
	if fx, _ := r.effects(tk.ID); len(fx) != 2 {
		t.Fatalf("two new notices gave %d pushes", len(fx))
	}
	r.run(tk.ID)
	if fx, _ := r.effects(tk.ID); len(fx) != 2 {
		t.Fatalf("an unchanged page pushed: %d pushes", len(fx))
	}

	// The same page read as served: an empty list, whatever the script
	// would have built, and never a push.
	spec.Render = ""
	r2, tk2 := portalRig(t, spec, source.Options{})
	for range 3 {
		r2.run(tk2.ID)
		p.Add("又一条")
	}
	if fx, _ := r2.effects(tk2.ID); len(fx) != 0 {
		t.Fatalf("the unrendered page gave %d pushes", len(fx))
	}
}
