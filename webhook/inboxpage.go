package webhook

import "embed"

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
	Page{Name: "inbox page", Path: "/inbox", Files: inboxPageFiles, Dir: "inboxpage", Assets: inboxAssets, CSP: inboxPageCSP}.Mount(s)
}
