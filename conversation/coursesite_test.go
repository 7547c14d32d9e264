package conversation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const (
	siteURL   = "https://school.instructure.com"
	siteToken = "7~Zq4TokenValueXk29Lm8Np3Rs6Tv1Wy5"
)

// handle sends m and returns the replies themselves.
func (r *rig) handle(principal, chat string, group bool, text string) []Reply {
	r.t.Helper()
	r.seq++
	return r.core.Handle(context.Background(), Message{Channel: channelOf(principal), ID: fmt.Sprintf("c-%d", r.seq), Principal: principal,
		Chat: chat, Group: group, Addressed: true, Text: text, Lang: "en"})
}

// TestI10_CourseSiteTokenAskedPrivatelyKeptOnlyInTheCredentialStore walks
// "/watch canvas <site> courses …": asked in a group, herald says to go
// private; in private it asks for the token, takes the next message as
// the token, asks the channel to delete it, stores it as the person's
// credential for the site and goes on with the request. The token is in
// no reply, not in the task, not in /task and not in the history.
func TestI10_CourseSiteTokenAskedPrivatelyKeptOnlyInTheCredentialStore(t *testing.T) {
	r := newHistoryRig(t)
	ctx := context.Background()
	var all []string
	say := func(chat string, group bool, text string) []Reply {
		out := r.handle(alice, chat, group, text)
		for _, x := range out {
			all = append(all, x.Text, x.Unretracted, x.Toast)
		}
		return out
	}

	got := joinText(say(group, true, "/watch canvas "+siteURL+" courses 12345,678 every 1h"))
	contains(t, got, "must not be posted in a group", "in a private chat", "/watch canvas "+siteURL)
	if has, _ := r.core.o.Credentials.Has(ctx, alice, siteURL); has {
		t.Fatal("a credential appeared from a group")
	}

	chat := ChatOf(alice)
	contains(t, joinText(say(chat, false, "/watch canvas "+siteURL+" courses 12345,678 every 1h")), "access token", "next message")
	out := say(chat, false, siteToken)
	if len(out) < 2 || !out[0].Retract || out[0].Unretracted == "" {
		t.Fatalf("the token message is not retracted: %+v", out)
	}
	rid := requestID(t, joinText(out))
	r.startCore()
	waitFor(t, func() bool { return len(r.out.to(ChatOf(admin))) > 0 })
	prompt := r.out.to(ChatOf(admin))[0].Text
	contains(t, prompt, "Courses: 12345, 678", "given in chat")
	all = append(all, prompt)
	tk := r.task(rid)
	if tk.Source.Kind != "canvas" || tk.Source.Token != "" || tk.Source.TokenFrom != alice || !slices.Equal(tk.Source.Courses, []string{"12345", "678"}) {
		t.Fatalf("task source %+v", tk.Source)
	}
	if tok, err := r.core.o.Credentials.Get(ctx, alice, siteURL+"/courses"); err != nil || tok != siteToken {
		t.Fatalf("stored credential %q, %v", tok, err)
	}
	shown := joinText(r.handle(admin, ChatOf(admin), false, "/task "+tk.ID))
	contains(t, shown, "Courses: 12345, 678", "given in chat")
	all = append(all, shown)

	// A second watch of the same site asks nothing: the token is stored.
	contains(t, joinText(say(chat, false, "/watch canvas "+siteURL+"/ every 1h name Other")), "Request r-")

	// /token replaces it; a reply that is not a token is asked again.
	contains(t, joinText(say(chat, false, "/token "+siteURL)), "next message")
	out = say(chat, false, "not a token")
	contains(t, joinText(out), "does not look like an access token")
	out = say(chat, false, siteToken+"X")
	contains(t, joinText(out), "stored", "next check")
	if tok, _ := r.core.o.Credentials.Get(ctx, alice, siteURL); tok != siteToken+"X" {
		t.Fatalf("the token was not replaced: %q", tok)
	}

	// /token <site> off forgets it.
	contains(t, joinText(say(chat, false, "/token "+siteURL+" off")), "no longer keep a token")
	if has, _ := r.core.o.Credentials.Has(ctx, alice, siteURL); has {
		t.Fatal("/token off kept the token")
	}

	// A token sent when nothing waits for one is not kept either.
	out = say(chat, false, "11~AnotherStrayTokenValue9876543210")
	if len(out) != 1 || !out[0].Retract || !strings.Contains(out[0].Text, "did not keep it") {
		t.Fatalf("a stray token is answered %+v", out)
	}

	for _, log := range []string{alice, group} {
		for _, turn := range r.stored(log) {
			all = append(all, turn.Text, turn.Reply)
		}
	}
	for _, s := range all {
		if strings.Contains(s, "TokenValue") {
			t.Fatalf("a token shows in %q", s)
		}
	}
}

func TestCourseSiteWatchParses(t *testing.T) {
	for _, tc := range []struct {
		text, kind string
		courses    []string
		err        string
	}{
		{"/watch canvas https://school.instructure.com courses 12345,678", "canvas", []string{"12345", "678"}, ""},
		{"/watch moodle https://moodle.example.edu every 1h", "moodle", nil, ""},
		{"/watch canvas https://school.instructure.com 课程 1、2", "canvas", []string{"1", "2"}, ""},
		{"/watch https://news.example.edu/feed.xml courses 1", "", nil, "Courses go with a course site"},
		{"/watch canvas https://school.instructure.com courses abc", "", nil, "not a course id"},
		{"/token", "", nil, "Give the course site's address"},
	} {
		cmd, err := Parse(tc.text, "herald_bot", nil)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.text, err, tc.err)
			}
			continue
		}
		if err != nil || cmd.Kind != tc.kind || !slices.Equal(cmd.Courses, tc.courses) {
			t.Errorf("%s: %+v %v", tc.text, cmd, err)
		}
	}
}
