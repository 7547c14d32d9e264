package telegram

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testToken    = "123456:AAE-s3cr3tT0kenValue_xyz"
	testBotID    = 123456
	testUsername = "herald_bot"
	testSecret   = "hook-Secret_42"
)

// call is one Bot API request the fake received.
type call struct {
	Method string
	Params map[string]string
}

// fakeAPI is a Telegram Bot API server speaking the real wire format:
// POST /bot<token>/<method> with multipart, urlencoded or JSON parameters,
// {"ok":…} envelopes with HTTP status = error_code, getUpdates honouring
// offset (updates below it are confirmed and forgotten), holding up to
// timeout seconds, and failing an older pending poll with 409 when a
// newer one arrives.
type fakeAPI struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	calls    []call
	pending  []json.RawMessage // unconfirmed updates, in order
	ids      []int64
	wake     chan struct{} // closed when an update arrives
	poller   chan struct{} // closed to fail the pending poll with 409
	nextMsg  int
	texts    map[string]string // chat:message -> text+markup, for "not modified"
	override map[string]func(p map[string]string) (int, string)
	done     chan struct{}
	files    map[string][]byte // file_id -> the document, served at /file/bot<token>/documents/<file_id>
}

// addFile makes a document the bot can fetch with getFile and the file
// endpoint.
func (f *fakeAPI) addFile(id string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[id] = data
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{t: t, wake: make(chan struct{}), nextMsg: 100, texts: map[string]string{},
		override: map[string]func(map[string]string) (int, string){}, done: make(chan struct{}), files: map[string][]byte{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(func() { close(f.done); f.srv.Close() })
	return f
}

// push queues an update (raw JSON with its update_id).
func (f *fakeAPI) push(raw string) {
	var head struct {
		ID int64 `json:"update_id"`
	}
	if err := json.Unmarshal([]byte(raw), &head); err != nil {
		f.t.Fatalf("bad update %s: %v", raw, err)
	}
	f.mu.Lock()
	f.pending = append(f.pending, json.RawMessage(raw))
	f.ids = append(f.ids, head.ID)
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}

// on makes method answer with status and body instead of the default.
func (f *fakeAPI) on(method string, h func(p map[string]string) (int, string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override[strings.ToLower(method)] = h
}

func (f *fakeAPI) callsTo(method string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if strings.EqualFold(c.Method, method) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAPI) unconfirmed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

func apiFail(code int, desc string) (int, string) {
	return code, fmt.Sprintf(`{"ok":false,"error_code":%d,"description":%q}`, code, desc)
}

func params(t testing.TB, r *http.Request) map[string]string {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		body, _ := io.ReadAll(r.Body)
		if len(body) > 0 {
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("bad JSON body: %v", err)
			}
		}
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				p[k] = s
			} else {
				p[k] = string(v)
			}
		}
	case "multipart/form-data":
		// The client streams an empty body for calls without parameters.
		if err := r.ParseMultipartForm(1 << 20); err != nil && !strings.Contains(err.Error(), "EOF") {
			t.Errorf("bad multipart body: %v", err)
		}
		if r.MultipartForm != nil {
			for k, v := range r.MultipartForm.Value {
				p[k] = v[0]
			}
		}
	case "application/x-www-form-urlencoded":
		_ = r.ParseForm()
		for k, v := range r.PostForm {
			p[k] = v[0]
		}
	}
	return p
}

func (f *fakeAPI) handle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if id, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+testToken+"/documents/"); ok && r.Method == http.MethodGet {
		f.mu.Lock()
		data, ok := f.files[id]
		f.calls = append(f.calls, call{Method: "file", Params: map[string]string{"file_id": id}})
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
		return
	}
	prefix := "/bot" + testToken + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
		return
	}
	method := strings.ToLower(strings.TrimPrefix(r.URL.Path, prefix))
	p := params(f.t, r)
	f.mu.Lock()
	msgID := 0
	if method == "sendmessage" {
		f.nextMsg++
		msgID = f.nextMsg
		p["_message_id"] = strconv.Itoa(msgID) // the id the fake assigns, for tests
	}
	f.calls = append(f.calls, call{Method: method, Params: p})
	h := f.override[method]
	f.mu.Unlock()
	if h != nil {
		if code, body := h(p); code != 0 {
			w.WriteHeader(code)
			fmt.Fprint(w, body)
			return
		}
	}
	switch method {
	case "getme":
		fmt.Fprintf(w, `{"ok":true,"result":{"id":%d,"is_bot":true,"first_name":"herald","username":%q}}`, testBotID, testUsername)
	case "getupdates":
		f.getUpdates(w, r, p)
	case "sendmessage":
		f.mu.Lock()
		id := msgID
		f.texts[p["chat_id"]+":"+strconv.Itoa(id)] = p["text"] + "\x00" + p["reply_markup"]
		f.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764464400,"chat":{"id":%s,"type":"private"},"text":%q}}`, id, p["chat_id"], p["text"])
	case "editmessagetext", "editmessagereplymarkup":
		key := p["chat_id"] + ":" + p["message_id"]
		f.mu.Lock()
		old, ok := f.texts[key]
		text := p["text"]
		if method == "editmessagereplymarkup" {
			text, _, _ = strings.Cut(old, "\x00")
		}
		now := text + "\x00" + p["reply_markup"]
		if ok {
			f.texts[key] = now
		}
		f.mu.Unlock()
		switch {
		case !ok:
			w.WriteHeader(400)
			fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: message to edit not found"}`)
		case old == now:
			w.WriteHeader(400)
			fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"}`)
		default:
			fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%s,"date":1764464400,"chat":{"id":%s,"type":"private"},"text":%q}}`, p["message_id"], p["chat_id"], text)
		}
	case "getfile":
		f.mu.Lock()
		data, ok := f.files[p["file_id"]]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: invalid file_id"}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"result":{"file_id":%q,"file_unique_id":"u-%s","file_size":%d,"file_path":"documents/%s"}}`, p["file_id"], p["file_id"], len(data), p["file_id"])
	case "answercallbackquery", "setmycommands", "setwebhook", "deletewebhook", "deletemessage":
		fmt.Fprint(w, `{"ok":true,"result":true}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`)
	}
}

// seed records a message the bot sent earlier, so that it can be edited.
func (f *fakeAPI) seed(chat int64, msgID int, text, markup string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.texts[strconv.FormatInt(chat, 10)+":"+strconv.Itoa(msgID)] = text + "\x00" + markup
}

func (f *fakeAPI) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout, _ := strconv.Atoi(p["timeout"])
	timeout = min(timeout, 50)
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()

	f.mu.Lock()
	if f.poller != nil {
		close(f.poller) // the older poll is terminated by this one
	}
	mine := make(chan struct{})
	f.poller = mine
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if f.poller == mine {
			f.poller = nil
		}
		f.mu.Unlock()
	}()

	for {
		f.mu.Lock()
		if offset > 0 {
			// Confirm everything below offset.
			var keep []json.RawMessage
			var keepIDs []int64
			for i, id := range f.ids {
				if id >= offset {
					keep = append(keep, f.pending[i])
					keepIDs = append(keepIDs, id)
				}
			}
			f.pending, f.ids = keep, keepIDs
		}
		batch := append([]json.RawMessage(nil), f.pending[:min(len(f.pending), 100)]...)
		wake := f.wake
		f.mu.Unlock()
		if len(batch) > 0 || timeout == 0 {
			out, _ := json.Marshal(batch)
			if batch == nil {
				out = []byte("[]")
			}
			fmt.Fprintf(w, `{"ok":true,"result":%s}`, out)
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			timeout = 0
		case <-mine:
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}`)
			return
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		}
	}
}

// waitFor polls cond until it holds or the test's patience runs out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
