package conversation

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
)

// Course sites (docs/sources.md, Learning platforms): "/watch canvas <site>
// [courses 12345,678]" reads the person's courses with their own access
// token. When none is stored for the site, herald asks for it, in a
// private chat only; the message carrying it is deleted where the
// platform allows (Reply.Retract), the token goes to the credential
// store and nowhere else: not into the task, a reply, the history or a
// log (I10). "/token <site>" replaces a stored token.

// maxCourses bounds the course ids of one watch.
const maxCourses = 50

var reCourseID = regexp.MustCompile(`^[0-9]{1,12}$`)

// courses reads "courses 12345,678".
func (p *argParser) courses(args []string) error {
	text := strings.NewReplacer(ideographicComma, ",", fullwidthComma, ",", ";", ",").Replace(strings.Join(args, ","))
	var ids []string
	for _, id := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || isSpace(r) }) {
		if !reCourseID.MatchString(id) {
			return usageErr(p.cmd.Name, CodeUsage, "coursesite.is_not_course_id", clip(id))
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 || len(ids) > maxCourses {
		return usageErr(p.cmd.Name, CodeUsage, "coursesite.give_1_to_course", maxCourses)
	}
	p.cmd.Courses = ids
	return nil
}

// site reads "/token <site-url> [off]" and "/login <site-url> [off]".
func (p *argParser) site() error {
	name := p.cmd.Name
	if len(p.toks) == 2 && isWord(p.toks[1].text, wordsTokenOff) {
		p.cmd.ID = "off"
		p.toks = p.toks[:1]
	}
	if len(p.toks) != 1 || !looksLikeURL(p.toks[0].text) {
		key := "coursesite.give_course_site_address"
		if name == "login" {
			key = "login.give_site_address"
		}
		return usageErr(name, CodeMissingURL, key)
	}
	u, err := checkURL(name, p.toks[0].text)
	if err != nil {
		return err
	}
	p.cmd.URL = u
	return nil
}

// courseSites handles a turn's course-site access tokens: asking for
// one, taking it in a private chat, forgetting it, and showing whose it is.
type courseSites struct{ t *turn }

func (cs courseSites) creds() *credentials.Store { return cs.t.c.o.Credentials }

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// needToken asks for the site's token when the person has none stored
// (ok false: go on with the request).
func (cs courseSites) needToken(cmd Command) (replies []Reply, ok bool) {
	has, err := cs.creds().Has(cs.t.ctx, cs.t.m.Principal, cmd.URL)
	if err != nil {
		return cs.t.failed(err), true
	}
	if has {
		return nil, false
	}
	return cs.askToken(dialog{Ask: "token", Command: cmd.Name, URL: cmd.URL, Kind: cmd.Kind, Name: cmd.TaskName,
		Selector: cmd.Selector, Before: cmd.Before, Schedule: cmd.Schedule, Courses: cmd.Courses}), true
}

// askToken asks for a token in a private chat, or says to go to one.
func (cs courseSites) askToken(d dialog) []Reply {
	host := hostOf(d.URL)
	if cs.t.m.Group {
		again := "/token " + d.URL
		if d.Command != "token" {
			again = "/" + d.Command + " " + d.Kind + " " + d.URL
		}
		return cs.t.reply("coursesite.to_read_i_need", host, again)
	}
	if err := (dialogs{cs.t}).saveDialog(d); err != nil {
		return cs.t.failed(err)
	}
	return cs.t.reply("coursesite.to_read_your_courses", host, host)
}

// token answers /token <site>: a new token for the site, asked for the
// same way; /token <site> off forgets the stored one.
func (cs courseSites) token(cmd Command) []Reply {
	if cmd.ID == "off" {
		if err := cs.creds().Delete(cs.t.ctx, cs.t.m.Principal, cmd.URL); err != nil {
			return cs.t.failed(err)
		}
		host := hostOf(cmd.URL)
		return cs.t.reply("coursesite.i_no_longer_keep", host, cmd.URL)
	}
	return cs.askToken(dialog{Ask: "token", Command: "token", URL: cmd.URL})
}

// takeToken takes the answer to the token question. The message is a
// secret whatever it says: it is never kept in history, and the channel
// deletes it.
func (cs courseSites) takeToken(d dialog, text string) []Reply {
	cs.t.secret = true
	retract := cs.t.retracted
	if cs.t.m.Group { // a dialog is only ever opened in a private chat
		dialogs{cs.t}.clearDialog()
		return retract(cs.t.reply("coursesite.token_must_not_be"))
	}
	tok := strings.TrimSpace(text)
	if !plausibleToken(tok) {
		return cs.t.askAgain(d, "coursesite.that_does_not_look")
	}
	if err := cs.creds().Put(cs.t.ctx, cs.t.m.Principal, d.URL, tok); err != nil {
		return retract(cs.t.failed(err))
	}
	dialogs{cs.t}.clearDialog()
	host := hostOf(d.URL)
	out := retract(cs.t.reply("coursesite.thanks_token_for_is", host))
	if d.Command == "token" {
		return append(out, cs.t.reply("coursesite.your_watches_of_use", host)...)
	}
	return append(out, cs.t.request(Command{Name: d.Command, URL: d.URL, Kind: d.Kind, TaskName: d.Name, Selector: d.Selector,
		Before: d.Before, Schedule: d.Schedule, Courses: d.Courses})...)
}

// plausibleToken: one printable ASCII word of 8 to credentials.MaxToken bytes.
func plausibleToken(s string) bool {
	if len(s) < 8 || len(s) > credentials.MaxToken {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r > '~' {
			return false
		}
	}
	return !strings.Contains(s, "://")
}

// looksLikeStrayToken: a lone long word mixing letters and digits, the
// shape of an access token sent when no question was waiting for one. It
// is neither kept nor passed on to the assistant.
func looksLikeStrayToken(s string) bool {
	if len(s) < 24 || !plausibleToken(s) {
		return false
	}
	letters, digits := false, false
	for _, r := range s {
		letters = letters || unicode.IsLetter(r)
		digits = digits || unicode.IsDigit(r)
	}
	return letters && digits
}

// strayToken answers a token sent with no question waiting for it.
func (cs courseSites) strayToken() []Reply {
	cs.t.secret = true
	return []Reply{{Text: cs.t.tr("coursesite.that_looks_like_access"),
		Retract: true, Unretracted: cs.t.tr("coursesite.i_could_not_delete_2")}}
}

// courseSite adds a course site's courses and where its token comes
// from to /task: never the token.
func (cs courseSites) courseSite(b *strings.Builder, tk *tasks.Task) {
	if len(tk.Source.Courses) > 0 {
		fmt.Fprintf(b, cs.t.tr("coursesite.courses"), strings.Join(tk.Source.Courses, ", "))
	}
	switch {
	case tk.Source.Auth != nil && tk.Source.TokenFrom != "":
		b.WriteString(cs.t.tr("login.cookie_owner_own"))
	case tk.Source.Auth != nil:
		b.WriteString(cs.t.tr("login.sign_in_from_config"))
	case tk.Source.TokenFrom != "":
		b.WriteString(cs.t.tr("coursesite.access_token_owner_own"))
	case tk.Source.Token != "":
		b.WriteString(cs.t.tr("coursesite.access_token_from_config"))
	}
}

// askAgain keeps the question d open after an answer that is no
// credential, deleting that answer too, and says so in the words of key.
func (t *turn) askAgain(d dialog, key string) []Reply {
	if err := (dialogs{t}).saveDialog(d); err != nil {
		return t.failed(err)
	}
	return t.retracted(t.reply(key))
}

// retracted asks the channel to delete the message a reply answers (a
// secret), saying so where it could not.
func (t *turn) retracted(r []Reply) []Reply {
	r[0].Retract = true
	r[0].Unretracted = t.tr("coursesite.i_could_not_delete")
	return r
}

// takesToken reports whether cmd watches a course site.
func takesToken(cmd Command) bool { return source.TakesToken(cmd.Kind) }
