package conversation

import (
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/store/credentials"
)

// Sign-in cookies from chat (docs/sources.md, Sign-in cookies from chat): "/login <site>" asks, in a private chat only, for the
// Cookie header of a browser signed in to the site. The message carrying
// it is deleted where the platform allows (Reply.Retract) and the cookie
// goes to the credential store, one per principal and site, and nowhere
// else (I10). A /watch of a page on that site then reads with it, asking
// the store at each run. "/login <site> off" forgets it.

type signIns struct{ t *turn }

func (si signIns) cookies() *credentials.Store { return si.t.c.o.Credentials.Cookies() }

// login answers /login <site> [off].
func (si signIns) login(cmd Command) []Reply {
	host := hostOf(cmd.URL)
	if cmd.ID == "off" {
		if err := si.cookies().Delete(si.t.ctx, si.t.m.Principal, cmd.URL); err != nil {
			return si.t.failed(err)
		}
		return si.t.reply("login.forgotten", host, cmd.URL)
	}
	if si.t.m.Group {
		return si.t.reply("login.private_only", cmd.URL)
	}
	if err := (dialogs{si.t}).saveDialog(dialog{Ask: "cookie", Command: "login", URL: cmd.URL}); err != nil {
		return si.t.failed(err)
	}
	return si.t.reply("login.send_cookie", host, host)
}

// takeCookie takes the answer to the cookie question: a secret whatever
// it says, kept in no history, and deleted by the channel.
func (si signIns) takeCookie(d dialog, text string) []Reply {
	t := si.t
	t.secret = true
	if t.m.Group { // a dialog is only ever opened in a private chat
		dialogs{t}.clearDialog()
		return t.retracted(t.reply("login.private_only", d.URL))
	}
	ck := strings.TrimSpace(text)
	if len(ck) > 7 && strings.EqualFold(ck[:7], "cookie:") {
		ck = strings.TrimSpace(ck[7:])
	}
	if !plausibleCookie(ck) {
		return t.askAgain(d, "login.not_a_cookie")
	}
	if err := si.cookies().Put(t.ctx, t.m.Principal, d.URL, ck); err != nil {
		return t.retracted(t.failed(err))
	}
	dialogs{t}.clearDialog()
	host := hostOf(d.URL)
	return t.retracted(t.reply("login.cookie_stored", host, host, d.URL))
}

// plausibleCookie: name=value pairs on one line, within the cookie bound.
func plausibleCookie(s string) bool {
	if len(s) < 3 || len(s) > credentials.MaxCookie || !strings.Contains(s, "=") {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return !strings.Contains(s, "://")
}

// storedCookie reports whether the asker keeps a cookie for the site of
// a page they ask to watch: the watch then reads with it.
func (si signIns) storedCookie(cmd Command) (bool, error) {
	if takesToken(cmd) || si.t.c.o.Credentials == nil || !webAddress(cmd.URL) {
		return false, nil // course tokens, and sources that are not a web page's address (an RSSHub route)
	}
	return si.cookies().Has(si.t.ctx, si.t.m.Principal, cmd.URL)
}

// webAddress reports whether u is an http or https address, the only
// kind a sign-in cookie is kept for.
func webAddress(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != ""
}
