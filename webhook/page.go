package webhook

import (
	"embed"
	"fmt"
	"net/http"
	"strconv"
)

// Page is a static browser page served from the binary: index.html at
// Path and its assets under Path/, so the page loads nothing from another
// origin and works on a machine without internet access. Its responses
// carry the page's content security policy and are never cached.
type Page struct {
	Name  string   // in errors: "inbox page"
	Path  string   // "/inbox"
	Files embed.FS // index.html and the assets, in Dir
	Dir   string   // "inboxpage"
	// Images lets the page load images from its own origin.
	Images bool
}

// pageAssets are the files a page serves under Path/, by name, with their
// content types: one script and one style sheet; nothing else there
// exists.
var pageAssets = map[string]string{
	"app.js":    "text/javascript; charset=utf-8",
	"style.css": "text/css; charset=utf-8",
}

// CSP is the page's content security policy: only its own script and
// style sheet run and it fetches only from its own origin, so markup that
// slipped into what it shows cannot execute; it cannot be framed, change
// its base URL or submit a form.
func (p Page) CSP() string {
	img := ""
	if p.Images {
		img = "img-src 'self'; "
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " + img +
		"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
}

// Mount serves the page on s: GET and HEAD of Path and Path/{asset}.
func (p Page) Mount(s *Server) {
	s.Handle(p.Path, func(w http.ResponseWriter, r *http.Request) error {
		return p.serve(w, r, "index.html", "text/html; charset=utf-8")
	})
	s.Handle(p.Path+"/{asset}", func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("asset")
		ctype, ok := pageAssets[name]
		if !ok {
			return ErrNotFound
		}
		return p.serve(w, r, name, ctype)
	})
}

// serve answers GET and HEAD with one embedded file and the page's
// security headers; no-store keeps a shared machine's cache free of the
// page and makes an upgrade's script reach the browser at once.
func (p Page) serve(w http.ResponseWriter, r *http.Request, name, ctype string) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return ErrMethod
	}
	b, err := p.Files.ReadFile(p.Dir + "/" + name)
	if err != nil {
		return fmt.Errorf("read embedded %s file %s: %w", p.Name, name, err)
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	SecureHeaders(h, p.CSP())
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	_, err = w.Write(b)
	return err
}

// SecureHeaders sets the headers a browser page's responses carry: its
// content security policy, no sniffing, no framing, no referrer, and
// no-store.
func SecureHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}
