package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/herald-bridge/herald/channels/console"
)

// Chat timeouts: a turn may check a source (/run), a poll only reads.
const (
	chatSendTimeout = 2 * time.Minute
	chatPollTimeout = 10 * time.Second
	chatPollEvery   = 2 * time.Second
)

// chatAnswer is the result of chat.send and chat.poll.
type chatAnswer struct {
	Replies []console.Reply `json:"replies"`
}

// chatReconnectWait bounds how long a scripted session waits for a
// restarted service to publish its new access record; an interactive one
// keeps trying until the person ends it.
const chatReconnectWait = 30 * time.Second

// chatSession is one `herald chat` as console:NAME. It talks to one
// service for its whole life: the one in the data dir it found first, with
// that data dir's instance identity. A restart of that service is followed;
// another service, in another data dir or in the same path made afresh,
// never is.
type chatSession struct {
	e       *env
	name    string
	dir     string     // the data dir of the service this session talks to
	patient bool       // interactive: wait for the service without a bound
	mu      sync.Mutex // one writer to stdout at a time

	cmu      sync.Mutex // guards c and instance
	c        *client
	instance string // the service's data dir identity, "" from an older service
}

// errOtherService: the session's service is gone and another one answers
// in its data dir.
var errOtherService = errors.New("another herald now serves")

func cmdChat(e *env, args []string) int {
	as := e.flags.String("as", "", "talk as console:NAME (default $USER, else admin)")
	rest, code, ok := e.parse(args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return e.usage("unexpected argument " + rest[0])
	}
	name := *as
	if name == "" {
		name = os.Getenv("USER")
		if !console.ValidName(name) {
			name = "admin"
		}
	}
	if !console.ValidName(name) {
		return e.usage("a name has 1-32 letters, digits, '-', '_' or '.'")
	}
	c, err := dial(e)
	if err != nil {
		return e.fail(err)
	}
	s := &chatSession{e: e, c: c, name: name, instance: c.instance}
	s.pin()
	if f, ok := e.stdin.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		s.patient = true
		return s.interactive(f)
	}
	return s.script(e.stdin)
}

// script answers each line in order, then collects what waits in the
// outbox once and exits.
func (s *chatSession) script(in io.Reader) int {
	sc := newChatLines(in)
	for sc.Scan() {
		if err := s.sendLine(sc); err != nil {
			return s.e.fail(err)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(s.e.stderr, "herald chat: read input: %v\n", err)
		return exitFailure
	}
	if err := s.poll(); err != nil {
		return s.e.fail(err)
	}
	return exitOK
}

// interactive shows a prompt and prints what herald says on its own
// (approval prompts, decisions) as it arrives.
func (s *chatSession) interactive(in io.Reader) int {
	// Fail fast, with the hint, when nothing is running.
	if err := s.poll(); err != nil {
		return s.e.fail(err)
	}
	fmt.Fprintf(s.e.stdout, "Talking to herald as console:%s. /help lists the commands; Ctrl-D ends.\n", s.name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(chatPollEvery):
			}
			ans, err := s.call("chat.poll", map[string]string{"as": s.name}, chatPollTimeout)
			if err != nil || len(ans.Replies) == 0 {
				continue
			}
			s.mu.Lock()
			fmt.Fprint(s.e.stdout, "\r")
			s.print(ans.Replies)
			fmt.Fprint(s.e.stdout, "> ")
			s.mu.Unlock()
		}
	}()
	sc := newChatLines(in)
	code := exitOK
	for {
		s.mu.Lock()
		fmt.Fprint(s.e.stdout, "> ")
		s.mu.Unlock()
		if !sc.Scan() {
			break
		}
		if err := s.sendLine(sc); err != nil {
			code = s.e.fail(err)
			break
		}
	}
	cancel()
	wg.Wait()
	s.mu.Lock()
	fmt.Fprintln(s.e.stdout)
	s.mu.Unlock()
	if code == exitOK {
		if err := s.poll(); err != nil {
			return s.e.fail(err)
		}
	}
	return code
}

// sendLine sends the line read, or answers a line too long to send
// without ending the session.
func (s *chatSession) sendLine(l *chatLines) error {
	if msg := l.TooLong(); msg != "" {
		s.mu.Lock()
		s.print([]console.Reply{{Text: msg}})
		s.mu.Unlock()
		return nil
	}
	return s.send(l.Text())
}

func (s *chatSession) send(line string) error {
	line = strings.TrimRight(line, "\r")
	return s.show("chat.send", map[string]string{"as": s.name, "text": line}, chatSendTimeout)
}

func (s *chatSession) poll() error {
	return s.show("chat.poll", map[string]string{"as": s.name}, chatPollTimeout)
}

// show makes one chat call and prints the replies it brings.
func (s *chatSession) show(method string, params map[string]string, timeout time.Duration) error {
	ans, err := s.call(method, params, timeout)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.print(ans.Replies)
	s.mu.Unlock()
	return nil
}

// pin fixes the session to the data dir its first dial found, so that a
// reconnect reads only that dir's access record, never the last-started
// service that the per-user record may name by then.
func (s *chatSession) pin() {
	dir := s.e.dataDir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s.dir = dir
	s.e.dataDir, s.e.dataDirFound = dir, false
}

// call runs op; when the service restarted under the session (its old
// token is refused, or nothing listens any more) it reconnects through the
// new access record and asks again. Both failures mean the request was
// not handled, so asking again cannot answer a line twice.
func (s *chatSession) call(op string, in any, timeout time.Duration) (chatAnswer, error) {
	for {
		s.cmu.Lock()
		c := s.c
		s.cmu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		var ans chatAnswer
		err := c.call(ctx, op, in, &ans)
		cancel()
		if err == nil || !unhandled(err) {
			return ans, err
		}
		switch rerr := s.reconnect(c); {
		case errors.Is(rerr, errOtherService):
			return ans, fmt.Errorf("%w the data dir %s; this session talked to the one that stopped there. Start 'herald chat' again to talk to the new one", rerr, s.dir)
		case rerr != nil:
			return ans, err
		}
	}
}

// unhandled reports whether err shows the service never handled the request.
func unhandled(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Code == "unauthorized"
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// reconnect says at once that the service does not answer, then waits for
// the same service (same data dir, same instance) to publish another
// access token than old's, switches the session to it and says so, once
// per restart. It returns errOtherService when a service of another
// instance publishes there, and errNotRunning when a scripted session's
// wait runs out.
func (s *chatSession) reconnect(old *client) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.c != old {
		return nil // another caller already reconnected
	}
	wait := "for up to " + chatReconnectWait.String()
	if s.patient {
		wait = "until it is back (Ctrl-C ends)"
	}
	fmt.Fprintf(s.e.stderr, "herald is not answering (data dir %s); trying again %s.\n", s.dir, wait)
	deadline := time.Now().Add(chatReconnectWait)
	for {
		if c, err := dial(s.e); err == nil && c.token != old.token {
			if s.instance != "" && c.instance != s.instance {
				return errOtherService
			}
			s.c, s.instance = c, c.instance
			fmt.Fprintln(s.e.stderr, "herald restarted; reconnected, carrying on.")
			return nil
		}
		if !s.patient && time.Now().After(deadline) {
			return errNotRunning
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// print writes replies; the caller holds s.mu. Buttons print as the
// command that presses them: [Approve → /approve r-7f3a].
func (s *chatSession) print(replies []console.Reply) {
	w := s.e.stdout
	for _, r := range replies {
		if s.e.json {
			b, _ := json.Marshal(r)
			fmt.Fprintln(w, string(b))
			continue
		}
		if r.Text != "" {
			fmt.Fprintln(w, r.Text)
		}
		if len(r.Buttons) > 0 {
			parts := make([]string, 0, len(r.Buttons))
			for _, b := range r.Buttons {
				parts = append(parts, fmt.Sprintf("[%s → /%s %s]", b.Label, b.Action, b.Arg))
			}
			fmt.Fprintln(w, strings.Join(parts, "  "))
		}
	}
}
