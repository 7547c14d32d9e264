package webhook

import (
	"embed"
	"fmt"
	"net/http"
	"strconv"
)

// inboxPageFiles is the inbox web page: one HTML file, its script and its
// style sheet, all served from the binary, so the page loads nothing from
// another origin and works on a machine without internet access.
//
//go:embed inboxpage/index.html inboxpage/app.js inboxpage/style.css
var inboxPageFiles embed.FS

// inboxPageCSP lets the page run only its own script and style sheet and
// fetch only from its own origin (the inbox API). No inline script or
// style can run, so markup that slipped into an item could not execute;
// the page cannot be framed, cannot change its base URL and cannot submit
// a form (the token form is read by the script, never submitted).
const inboxPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// inboxAssets are the files served under /inbox/, by name, with their
// content types; nothing else under /inbox/ exists.
var inboxAssets = map[string]string{
	"app.js":    "text/javascript; charset=utf-8",
	"style.css": "text/css; charset=utf-8",
}

// MountInboxPage mounts the inbox web page on s: GET /inbox and its
// assets under /inbox/. The page is static and carries no data; its script
// reads GET /api/v1/inbox from the same origin with the person's bearer
// token, which it keeps in the browser tab, so the server holds no session
// for it and needs no CORS.
func MountInboxPage(s *Server) {
	s.Handle("/inbox", func(w http.ResponseWriter, r *http.Request) error {
		return serveInboxFile(w, r, "index.html", "text/html; charset=utf-8")
	})
	s.Handle("/inbox/{asset}", func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("asset")
		ctype, ok := inboxAssets[name]
		if !ok {
			return ErrNotFound
		}
		return serveInboxFile(w, r, name, ctype)
	})
}

// serveInboxFile answers GET and HEAD with one embedded file and the
// page's security headers; no-store keeps a shared machine's cache free
// of the page and makes an upgrade's script reach the browser at once.
func serveInboxFile(w http.ResponseWriter, r *http.Request, name, ctype string) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return ErrMethod
	}
	b, err := inboxPageFiles.ReadFile("inboxpage/" + name)
	if err != nil {
		return fmt.Errorf("read embedded inbox page file %s: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Content-Security-Policy", inboxPageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	_, err = w.Write(b)
	return err
}
