package email_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http/httptest"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/email"
	"github.com/herald-bridge/herald/delivery/email/emailtest"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

const (
	password = "pw-9d41c7e2b8"
	alice    = "alice@example.edu"
	bob      = "bob@example.edu"
)

func relay(m *emailtest.Server) email.SMTP {
	return email.SMTP{Host: m.Host, Port: m.Port, From: "Herald <herald@example.edu>", TLS: email.TLSNone}
}

func newSink(t *testing.T, srv email.SMTP, opts ...email.Option) *email.Sink {
	t.Helper()
	opts = append([]email.Option{email.WithClock(func() time.Time { return t0 }), email.WithTimeout(5 * time.Second)}, opts...)
	s, err := email.New(srv, []string{alice, bob}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The title of the acceptance item: Chinese text, an ampersand, a tag
// and a CQ code ("new homework & <b>bold</b> [CQ:at,qq=all]").
const (
	hostile = "\u65b0\u4f5c\u4e1a & <b>bold</b> [CQ:at,qq=all]"
	link    = "https://news.example.edu/a?x=1&y=2"
	task    = "\u8bfe\u7a0b\u901a\u77e5" // "course notices"
)

func news(key string, attempt int) delivery.Delivery {
	return delivery.Delivery{
		Key:     key,
		To:      delivery.Address{Kind: email.Kind, Name: "mail-team"},
		Lang:    "zh",
		Zone:    time.UTC,
		Attempt: attempt,
		Message: delivery.Message{Kind: delivery.KindChanged, TaskName: task, OccurredAt: t0, Items: []delivery.Item{
			{ID: "1", Title: hostile, URL: link, Change: delivery.ChangeNew},
		}},
	}
}

// parsed is a received message taken apart.
type parsed struct {
	header  mail.Header
	subject string
	text    string
	html    string
}

func parse(t *testing.T, raw []byte) parsed {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	p := parsed{header: msg.Header}
	if p.subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v), want multipart/alternative", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var body io.Reader = part
		if part.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
			body = quotedprintable.NewReader(part)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		ct, cp, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if !strings.EqualFold(cp["charset"], "utf-8") {
			t.Errorf("part %s has charset %q", ct, cp["charset"])
		}
		switch ct {
		case "text/plain":
			p.text = string(b)
		case "text/html":
			p.html = string(b)
		}
	}
	return p
}

var (
	encodedSubject = regexp.MustCompile(`(?i)\r\nSubject:\s*=\?UTF-8\?[QB]\?`)
	encodedWord    = regexp.MustCompile(`=\?[^?]+\?[QqBb]\?[^?]*\?=`)
)

// TestSend_MultipartTextAndHTMLWithEncodedSubject: one push arrives once
// at every address, as text and HTML alternatives: Chinese intact, the
// tag and ampersand escaped in the HTML (never markup), the link an
// anchor, and the subject an RFC 2047 UTF-8 encoded word.
func TestSend_MultipartTextAndHTMLWithEncodedSubject(t *testing.T) {
	m := emailtest.New(t)
	s := newSink(t, relay(m))
	d := news("effect-1", 1)
	if o := s.Send(context.Background(), d); o.Result != delivery.Completed {
		t.Fatalf("outcome %+v", o)
	}
	got := m.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages, want 1", len(got))
	}
	if got[0].From != "herald@example.edu" || strings.Join(got[0].To, ",") != alice+","+bob {
		t.Errorf("envelope from %q to %q", got[0].From, got[0].To)
	}
	raw := string(got[0].Data)
	if !encodedSubject.MatchString(raw) {
		t.Errorf("subject is not an encoded word:\n%s", raw)
	}
	for _, w := range encodedWord.FindAllString(raw, -1) {
		if len(w) > 75 {
			t.Errorf("encoded word %q is longer than 75 characters", w)
		}
	}
	for _, line := range strings.Split(raw, "\r\n") {
		for _, r := range line {
			if r > 127 {
				t.Fatalf("raw message has non-ASCII line %q", line)
			}
		}
	}
	p := parse(t, got[0].Data)
	if want := email.Subject(d, t0); p.subject != want || !strings.Contains(p.subject, task) {
		t.Errorf("subject %q, want %q", p.subject, want)
	}
	if !strings.Contains(p.text, hostile) || !strings.Contains(p.text, link) {
		t.Errorf("text part lost the title or link:\n%s", p.text)
	}
	for _, want := range []string{
		"\u65b0\u4f5c\u4e1a &amp; &lt;b&gt;bold&lt;/b&gt; [CQ:at,qq=all]",
		`<a href="https://news.example.edu/a?x=1&amp;y=2">`,
	} {
		if !strings.Contains(p.html, want) {
			t.Errorf("html part lacks %q:\n%s", want, p.html)
		}
	}
	if strings.Contains(p.html, "<b>bold") {
		t.Errorf("the title became markup:\n%s", p.html)
	}
	if ua := p.header.Get("User-Agent"); !strings.HasPrefix(ua, "herald/") {
		t.Errorf("User-Agent %q", ua)
	}
	if p.header.Get("Auto-Submitted") != "auto-generated" {
		t.Errorf("Auto-Submitted %q", p.header.Get("Auto-Submitted"))
	}
}

// TestSend_MessageIDComesFromTheEffectKey: every attempt of one push
// carries the same Message-ID, derived from the key under the sender's
// domain; another push gets another.
func TestSend_MessageIDComesFromTheEffectKey(t *testing.T) {
	m := emailtest.New(t)
	s := newSink(t, relay(m))
	var outs []delivery.Outcome
	for i, d := range []delivery.Delivery{news("effect-1", 1), news("effect-1", 2), news("effect-2", 1)} {
		if outs = append(outs, s.Send(context.Background(), d)); outs[i].Result != delivery.Completed {
			t.Fatalf("send %d: %+v", i, outs[i])
		}
	}
	got := m.Messages()
	if len(got) != 3 {
		t.Fatalf("%d messages", len(got))
	}
	ids := make([]string, 3)
	for i, g := range got {
		ids[i] = parse(t, g.Data).header.Get("Message-Id")
	}
	want := "<" + s.MessageID("effect-1") + ">"
	if ids[0] != want || ids[1] != want || ids[2] == want {
		t.Errorf("Message-IDs %q, want %q twice then another", ids, want)
	}
	if id := s.MessageID("effect-1"); len(id) != 32+len("@herald.example.edu") || !strings.HasSuffix(id, "@herald.example.edu") {
		t.Errorf("MessageID %q", id)
	}
	if outs[0].ProviderID != s.MessageID("effect-1") {
		t.Errorf("provider id %q", outs[0].ProviderID)
	}
}

// TestI3_TransientReplyAtRcptIsRetriedAndSendsNothing: a 4xx at RCPT is
// retry_after, and no data was sent.
func TestI3_TransientReplyAtRcptIsRetriedAndSendsNothing(t *testing.T) {
	m := emailtest.New(t)
	m.FailRcpt(emailtest.Error(451, [3]int{4, 3, 0}, "try again later"))
	o := newSink(t, relay(m)).Send(context.Background(), news("k", 1))
	if o.Result != delivery.RetryAfter || o.After <= 0 || o.Reason != "smtp_451_rcpt" || o.Unreachable {
		t.Errorf("outcome %+v, want retry_after smtp_451_rcpt", o)
	}
	if n := len(m.Messages()); n != 0 {
		t.Errorf("%d messages reached the server", n)
	}
	m.FailRcpt(nil)
	if o := newSink(t, relay(m)).Send(context.Background(), news("k", 2)); o.Result != delivery.Completed {
		t.Errorf("the retry: %+v", o)
	}
}

// TestI3_PermanentReplyFails: a 5xx at MAIL or RCPT fails and marks the
// recipient unreachable; a 5xx to the data fails without; a 4xx to the
// data (nothing accepted) is retried.
func TestI3_PermanentReplyFails(t *testing.T) {
	unknownUser := emailtest.Error(550, [3]int{5, 1, 1}, "<"+alice+">: no such user")
	for _, c := range []struct {
		name              string
		set               func(*emailtest.Server)
		result            delivery.Result
		reason            string
		unreachable, kept bool
	}{
		{"rcpt 550", func(m *emailtest.Server) { m.FailRcpt(unknownUser) }, delivery.Failed, "smtp_550_rcpt", true, false},
		{"mail 553", func(m *emailtest.Server) { m.FailMail(emailtest.Error(553, [3]int{5, 7, 1}, "sender refused")) }, delivery.Failed, "smtp_553_mail", true, false},
		{"data 554", func(m *emailtest.Server) { m.FailData(emailtest.Error(554, [3]int{5, 6, 0}, "content rejected")) }, delivery.Failed, "smtp_554_data", false, true},
		{"data 452", func(m *emailtest.Server) { m.FailData(emailtest.Error(452, [3]int{4, 3, 1}, "insufficient storage")) }, delivery.RetryAfter, "smtp_452_data", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := emailtest.New(t)
			c.set(m)
			o := newSink(t, relay(m)).Send(context.Background(), news("k", 1))
			if o.Result != c.result || o.Reason != c.reason || o.Unreachable != c.unreachable {
				t.Errorf("outcome %+v, want %s %s unreachable=%v", o, c.result, c.reason, c.unreachable)
			}
			if kept := len(m.Messages()) > 0; kept != c.kept {
				t.Errorf("data reached the server: %v", kept)
			}
		})
	}
}

// TestI3_ConnectionLostAfterTheFinalDotIsUnknown: the server read the
// whole message and the connection went before its reply: it may have
// accepted it, so the attempt is unknown (never retried as not sent).
func TestI3_ConnectionLostAfterTheFinalDotIsUnknown(t *testing.T) {
	m := emailtest.New(t)
	m.DropAfterData(true)
	o := newSink(t, relay(m)).Send(context.Background(), news("k", 1))
	if o.Result != delivery.Unknown || o.Reason != "smtp_lost_after_data" {
		t.Errorf("outcome %+v, want unknown smtp_lost_after_data", o)
	}
	if n := len(m.Messages()); n != 1 {
		t.Errorf("the server read %d messages, want 1", n)
	}
}

// TestI3_RefusedLoginFailsAndMarksUnreachable: a 5xx to AUTH fails at
// once and marks the recipient unreachable; nothing is sent.
func TestI3_RefusedLoginFailsAndMarksUnreachable(t *testing.T) {
	m := emailtest.New(t, emailtest.WithPassword(password))
	srv := relay(m)
	srv.Username, srv.Password = "herald", "wrong-"+password
	o := newSink(t, srv).Send(context.Background(), news("k", 1))
	if o.Result != delivery.Failed || !o.Unreachable || o.Reason != "smtp_535_auth" {
		t.Errorf("outcome %+v, want failed unreachable smtp_535_auth", o)
	}
	if len(m.Messages()) != 0 || m.Logins() != 1 {
		t.Errorf("received %d, logins %d", len(m.Messages()), m.Logins())
	}
	srv.Password = password
	if o := newSink(t, srv).Send(context.Background(), news("k", 1)); o.Result != delivery.Completed {
		t.Errorf("with the right password: %+v", o)
	}
}

// TestI3_NoServerIsRetried: a refused connection sent nothing.
func TestI3_NoServerIsRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	srv := email.SMTP{Host: "127.0.0.1", Port: port, From: "herald@example.edu", TLS: email.TLSNone}
	if o := newSink(t, srv).Send(context.Background(), news("k", 1)); o.Result != delivery.RetryAfter || o.After <= 0 {
		t.Errorf("outcome %+v, want retry_after", o)
	}
}

// testCert is a certificate for 127.0.0.1 and the pool that trusts it.
func testCert(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	t.Cleanup(hs.Close)
	roots := x509.NewCertPool()
	roots.AddCert(hs.Certificate())
	return &tls.Config{Certificates: hs.TLS.Certificates, MinVersion: tls.VersionTLS12}, roots
}

// TestSend_StartTLSAndImplicitTLS: starttls upgrades before the login
// and refuses a server that does not offer it; tls speaks TLS from the
// first byte; an untrusted certificate fails.
func TestSend_StartTLSAndImplicitTLS(t *testing.T) {
	cfg, roots := testCert(t)
	for _, mode := range []string{email.TLSStartTLS, email.TLSImplicit} {
		m := emailtest.New(t, emailtest.WithTLS(cfg, mode == email.TLSImplicit))
		srv := email.SMTP{Host: "127.0.0.1", Port: m.Port, Username: "herald", Password: password, From: "herald@example.edu", TLS: mode}
		if o := newSink(t, srv, email.WithRootCAs(roots)).Send(context.Background(), news("k", 1)); o.Result != delivery.Completed {
			t.Errorf("%s: %+v", mode, o)
		}
		if o := newSink(t, srv).Send(context.Background(), news("k", 1)); o.Result != delivery.Failed || o.Reason != "smtp_tls_certificate" {
			t.Errorf("%s with an untrusted certificate: %+v", mode, o)
		}
	}
	plain := emailtest.New(t)
	srv := email.SMTP{Host: "127.0.0.1", Port: plain.Port, From: "herald@example.edu", TLS: email.TLSStartTLS}
	if o := newSink(t, srv, email.WithRootCAs(roots)).Send(context.Background(), news("k", 1)); o.Result != delivery.Failed || o.Reason != "smtp_no_starttls" {
		t.Errorf("starttls to a server without it: %+v", o)
	}
	if len(plain.Messages()) != 0 {
		t.Error("a message went out in clear")
	}
}

// TestI10_NoAddressOrPasswordInOutcomesOrErrors: reasons never carry an
// address or the password, even when the server's reply quotes one, and
// construction errors quote neither.
func TestI10_NoAddressOrPasswordInOutcomesOrErrors(t *testing.T) {
	m := emailtest.New(t, emailtest.WithPassword(password))
	m.FailRcpt(emailtest.Error(550, [3]int{5, 1, 1}, "<"+alice+"> unknown, password "+password))
	srv := relay(m)
	o1 := newSink(t, srv).Send(context.Background(), news("k", 1))
	srv.Username, srv.Password = "herald", password+"x"
	o2 := newSink(t, srv).Send(context.Background(), news("k", 1))
	_, err := email.New(relay(m), []string{alice, "not an address " + bob})
	_, cfgErr := (&email.Config{To: []string{alice}}).NewSink(delivery.SinkDeps{Name: "mail-team"})
	if err == nil || cfgErr == nil {
		t.Fatalf("want errors for a bad address (%v) and a missing smtp section (%v)", err, cfgErr)
	}
	for _, text := range []string{o1.Reason, o2.Reason, err.Error(), cfgErr.Error(), o1.ProviderID, o2.ProviderID} {
		for _, secret := range []string{alice, bob, password} {
			if strings.Contains(text, secret) {
				t.Errorf("%q carries %q", text, secret)
			}
		}
	}
}

// TestConfig_BuildsFromTheSharedSection: the recipient section builds
// its sink from the smtp section in SinkDeps.Sections.
func TestConfig_BuildsFromTheSharedSection(t *testing.T) {
	m := emailtest.New(t)
	srv := relay(m)
	cfg := &email.Config{To: []string{alice}}
	sink, err := delivery.BuildSink(cfg, delivery.SinkDeps{Name: "mail-team", Sections: map[string]any{email.SectionKey: &srv}})
	if err != nil {
		t.Fatal(err)
	}
	if o := sink.Send(context.Background(), news("k", 1)); o.Result != delivery.Completed {
		t.Fatalf("outcome %+v", o)
	}
	if got := m.Messages(); len(got) != 1 || len(got[0].To) != 1 || got[0].To[0] != alice {
		t.Errorf("received %+v", got)
	}
	if s := cfg.Secrets(); len(s) != 1 || s[0] != alice {
		t.Errorf("secrets %q", s)
	}
}
