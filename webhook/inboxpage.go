package webhook

import "embed"

// inboxPageFiles is the inbox web page: one HTML file, its script and its
// style sheet.
//
//go:embed inboxpage/index.html inboxpage/app.js inboxpage/style.css
var inboxPageFiles embed.FS

// MountInboxPage mounts the inbox web page on s: GET /inbox and its
// assets under /inbox/. The page is static and carries no data; its script
// reads GET /api/v1/inbox from the same origin with the person's bearer
// token, which it keeps in the browser tab, so the server holds no session
// for it and needs no CORS. The token form is read by the script, never
// submitted.
func MountInboxPage(s *Server) {
	Page{Name: "inbox page", Path: "/inbox", Files: inboxPageFiles, Dir: "inboxpage"}.Mount(s)
}
