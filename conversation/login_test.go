package conversation

import (
	"context"
	"strings"
	"testing"
)

const (
	portalURL    = "https://portal.example.edu"
	portalCookie = "JSESSIONID=Qm9vazEyMzQ1Njc4OTA; route=r7"
)

// TestI10_LoginCookieAskedPrivatelyKeptOnlyInTheCredentialStore walks
// "/login <site>": refused in a group; in private herald asks for the
// Cookie header, deletes the message carrying it, stores it as the
// person's credential for the site and says where it is kept and how it
// is removed. A later /watch of a page on the site reads with it, the
// task naming only whose it is. "/login <site> off" forgets it.
func TestI10_LoginCookieAskedPrivatelyKeptOnlyInTheCredentialStore(t *testing.T) {
	r := newHistoryRig(t)
	ctx := context.Background()
	cookies := r.core.o.Credentials.Cookies()
	var all []string
	say := func(chat string, grp bool, text string) []Reply {
		out := r.handle(alice, chat, grp, text)
		for _, x := range out {
			all = append(all, x.Text, x.Unretracted, x.Toast)
		}
		return out
	}

	contains(t, joinText(say(group, true, "/login "+portalURL)), "must not be posted in a group", "/login "+portalURL)
	chat := ChatOf(alice)
	contains(t, joinText(say(chat, false, "/login "+portalURL)), "Cookie header", "next message")
	out := say(chat, false, "no cookie here")
	contains(t, joinText(out), "does not look like a Cookie header")
	if !out[0].Retract {
		t.Fatal("a reply to the cookie question is not retracted")
	}
	out = say(chat, false, "Cookie: "+portalCookie)
	if len(out) != 1 || !out[0].Retract || out[0].Unretracted == "" {
		t.Fatalf("the cookie message is not retracted: %+v", out)
	}
	contains(t, joinText(out), "stored as your credential in herald's store", "/login "+portalURL+" off", "/forget")
	if ck, err := cookies.Get(ctx, alice, portalURL+"/notices"); err != nil || ck != portalCookie {
		t.Fatalf("stored cookie %q, %v", ck, err)
	}
	if has, _ := r.core.o.Credentials.Has(ctx, alice, portalURL); has {
		t.Fatal("the cookie was stored as an access token")
	}

	rid := requestID(t, joinText(say(chat, false, "/watch "+portalURL+"/notices as html selector li every 1h")))
	tk := r.task(rid)
	if tk.Source.Auth == nil || tk.Source.Auth.Cookie != "" || tk.Source.TokenFrom != alice {
		t.Fatalf("task source %+v", tk.Source)
	}
	shown := joinText(r.handle(admin, ChatOf(admin), false, "/task "+tk.ID))
	contains(t, shown, "Sign-in: the owner's cookie")
	all = append(all, shown)

	contains(t, joinText(say(chat, false, "/login "+portalURL+" off")), "no longer keep a sign-in cookie")
	if has, _ := cookies.Has(ctx, alice, portalURL); has {
		t.Fatal("/login off kept the cookie")
	}
	for _, log := range []string{alice, group} {
		for _, turn := range r.stored(log) {
			all = append(all, turn.Text, turn.Reply)
		}
	}
	for _, s := range all {
		if strings.Contains(s, "Qm9vazEyMzQ1Njc4OTA") {
			t.Fatalf("the cookie shows in %q", s)
		}
	}
}
