package browser_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/source/browser"
	"github.com/herald-bridge/herald/tasks/source/browser/browsertest"
	"github.com/herald-bridge/herald/tasks/watch"
)

// heldPage serves a page whose script asks /hold, which the server holds
// for hold: the page stays open (not quiet) until then. It counts the
// pages between their load ("/") and the answer to their /hold, and
// keeps the most seen at once.
type heldPage struct {
	hold     time.Duration
	mu       sync.Mutex
	open     int
	peak     int
	rendered int
}

func (h *heldPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	switch r.URL.Path {
	case "/":
		h.mu.Lock()
		h.open++
		h.peak = max(h.peak, h.open)
		h.mu.Unlock()
		fmt.Fprint(w, `<html><body><ul></ul><script>
fetch("/hold").then(r => r.text()).then(t => { document.querySelector("ul").innerHTML = "<li>" + t + "</li>" })
</script></body></html>`)
	case "/hold":
		select {
		case <-time.After(h.hold):
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.open--
		h.rendered++
		h.mu.Unlock()
		fmt.Fprint(w, "held")
	default:
		http.NotFound(w, r)
	}
}

func TestRender_MaxParallelBoundsThePagesOpenAtOnce(t *testing.T) {
	const bound, pages = 2, 4
	pool := browsertest.Browser(t, browser.Options{MaxParallel: bound})
	// Each page is held open long enough that pages started together
	// overlap: without the bound all four would be open at once.
	h := &heldPage{hold: 2 * time.Second}
	srv := httptest.NewServer(h)
	defer srv.Close()
	s, err := source.New(watch.Spec{Kind: source.KindHTML, URL: srv.URL + "/", Selector: "li", Render: watch.RenderBrowser},
		source.Options{AllowPrivate: true, Browser: pool})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, pages)
	for range pages {
		go func() {
			res, err := s.Fetch(context.Background(), watch.Conditional{})
			if err == nil && (len(res.Items) != 1 || res.Items[0].Title != "held") {
				err = fmt.Errorf("items = %+v", res.Items)
			}
			errs <- err
		}()
	}
	for range pages {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rendered != pages {
		t.Errorf("%d pages held, want %d", h.rendered, pages)
	}
	if h.peak > bound {
		t.Fatalf("%d pages open at once, want at most max_parallel %d", h.peak, bound)
	}
	t.Logf("at most %d of %d pages open at once", h.peak, pages)
}

// marker is the content of every file the pages below offer for download.
const marker = "herald-download-marker"

func TestRender_DownloadsAreDeniedAndSaveNothing(t *testing.T) {
	// The browser's home, where its default download directory lies.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_DOWNLOAD_DIR", filepath.Join(home, "Downloads"))
	dir := filepath.Join(t.TempDir(), "browser")
	pool := browsertest.Browser(t, browser.Options{Dir: dir, Timeout: 15 * time.Second})
	pages := map[string]string{
		// A link with the download attribute, clicked by the script.
		"/link": `<a id="d" href="/file.bin" download="notice.bin">file</a>
<script>document.getElementById("d").click()</script>`,
		// A file the script makes itself: no request reaches the server.
		"/blob": `<script>const a = document.createElement("a");
a.href = URL.createObjectURL(new Blob(["` + marker + `"])); a.download = "notice.txt";
document.body.appendChild(a); a.click()</script>`,
		// The page itself is sent to an answer that is an attachment.
		"/attachment": `<script>location.href = "/attachment.bin"</script>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/file.bin", "/attachment.bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="notice.bin"`)
			fmt.Fprint(w, marker)
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body><ul><li>选课通知</li></ul>%s</body></html>`, body)
	}))
	defer srv.Close()

	// Saved files are looked for while the pages render too: a page's
	// profile directory is removed when it is done.
	found := make(chan string, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, root := range []string{home, dir} {
				if f := savedUnder(root); f != "" {
					select {
					case found <- f:
					default:
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	for path := range pages {
		s, err := source.New(watch.Spec{Kind: source.KindHTML, URL: srv.URL + path, Selector: "li", Render: watch.RenderBrowser},
			source.Options{AllowPrivate: true, Browser: pool})
		if err != nil {
			t.Fatal(err)
		}
		// The pool's time bound ends the page; one that did not settle
		// within it hung on its download.
		res, err := s.Fetch(context.Background(), watch.Conditional{})
		if err != nil {
			t.Errorf("%s: %v", path, err)
		} else if len(res.Items) != 1 {
			t.Errorf("%s: items = %+v", path, res.Items)
		}
	}
	close(done)
	wg.Wait()
	select {
	case f := <-found:
		t.Fatalf("a download was saved: %s", f)
	default:
	}
}

// savedUnder returns a file under root that holds the marker or is being
// downloaded, or "".
func savedUnder(root string) string {
	var hit string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || hit != "" {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, "notice.") || strings.HasSuffix(name, ".crdownload") || strings.HasPrefix(name, ".com.google.Chrome.") {
			hit = path
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() && info.Size() == int64(len(marker)) {
			if b, err := os.ReadFile(path); err == nil && string(b) == marker {
				hit = path
			}
		}
		return nil
	})
	return hit
}
