// Package download keeps a learning-platform task's course files in a
// directory (docs/sources.md, Learning platforms: downloads). The task manager
// claims one effect per file version in the ledger (I1); the dispatcher
// hands each to the Sink here, which re-reads the file's metadata, follows
// the site's redirects to its file storage by hand within the task's
// scope, checks what came back, and writes it temp-then-rename through an
// os.Root so that nothing lands outside the directory.
package download

import (
	"encoding/json"
	"fmt"
	"github.com/herald-bridge/herald/delivery/egress"
	"mime"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Kind is the effect kind of a download.
const Kind = "course.file"

// recipientPrefix starts the recipient of a task's downloads: they go to
// the task's directory, not to a person, and resolve only through Router.
const recipientPrefix = "download:"

// Recipient is the ledger recipient of task's downloads.
func Recipient(taskID string) string { return recipientPrefix + taskID }

// Identity is the event identity of one version of a file: a changed file
// (new modified time or size) is a new download; the same one never is.
func Identity(f *watch.File) string {
	return "file|" + f.ID + "|" + f.Modified + "|" + strconv.FormatInt(f.Size, 10)
}

// DefaultHosts are the file-storage hosts a site may redirect a download
// to when the policy names none (Instructure's storage).
var DefaultHosts = []string{"*.inscloudgate.net", "*.canvas-user-content.com", "instructure-uploads.s3.amazonaws.com"}

// Message is the message a download effect carries: the file, as JSON in
// Text, and its name as the one item.
func Message(taskID, taskName string, f *watch.File, now time.Time) (delivery.Message, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return delivery.Message{}, fmt.Errorf("encode file: %w", err)
	}
	return delivery.Message{Kind: Kind, Title: f.Name, Text: string(b), TaskID: taskID, TaskName: taskName, OccurredAt: now}, nil
}

// FileOf reads the file back from a download effect's message.
func FileOf(m delivery.Message) (watch.File, error) {
	var f watch.File
	if m.Kind != Kind {
		return f, fmt.Errorf("not a download (%s)", m.Kind)
	}
	if err := json.Unmarshal([]byte(m.Text), &f); err != nil {
		return f, fmt.Errorf("decode file: %w", err)
	}
	return f, nil
}

// Wanted reports whether d keeps f: every file when d lists no types,
// else one whose extension ("pdf", ".pdf") or media type ("application/pdf",
// "video/*") is listed.
func Wanted(d *watch.Download, f *watch.File) bool {
	if d == nil || f == nil {
		return false
	}
	if len(d.Types) == 0 {
		return true
	}
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(f.Name)), ".")
	mt, _, _ := mime.ParseMediaType(f.ContentType)
	for _, t := range d.Types {
		t = strings.ToLower(strings.TrimSpace(t))
		switch {
		case strings.Contains(t, "/") && strings.HasSuffix(t, "/*"):
			if strings.HasPrefix(mt, strings.TrimSuffix(t, "*")) {
				return true
			}
		case strings.Contains(t, "/"):
			if mt == t {
				return true
			}
		case strings.TrimPrefix(t, ".") == ext && ext != "":
			return true
		}
	}
	return false
}

// Plan is what one task's downloads need, as the task manager has it at
// the moment of the download: the grant still holds, or there is no plan.
type Plan struct {
	Site  *url.URL // the site's origin (and, for moodle, its path)
	Kind  string   // canvas | moodle
	Token string   // a secret: never log or show it (I10)
	// Dir is the granted directory: relative to the task's own directory
	// under the data dir, or absolute (under a policy download root).
	Dir string
	// Hosts are the file-storage hosts besides the site's that downloads
	// may be redirected to ("*.example.net" patterns).
	Hosts        []string
	AllowPrivate bool
	// Route is the task's source route (SPEC §17; nil: direct).
	Route *egress.Route
}

// CheckDir reports whether dir is a usable download dir: relative and
// inside the task's directory, or absolute and under one of roots.
func CheckDir(dir string, roots []string) error {
	if strings.TrimSpace(dir) == "" {
		return fmt.Errorf("download dir is empty")
	}
	if filepath.IsAbs(dir) {
		clean := filepath.Clean(dir)
		for _, r := range roots {
			if rel, err := filepath.Rel(filepath.Clean(r), clean); err == nil && filepath.IsLocal(rel) || rel == "." {
				return nil
			}
		}
		return fmt.Errorf("download dir %s is not under a root listed in policy.download_roots", clean)
	}
	if !filepath.IsLocal(dir) {
		return fmt.Errorf("download dir %q leaves the task's directory", dir)
	}
	return nil
}

// NormalDir is the form of a download dir a grant records.
func NormalDir(dir string) string { return filepath.Clean(strings.TrimSpace(dir)) }

// Kept is one file kept for a task.
type Kept struct {
	Name   string    `json:"name"` // where it is, relative to the task's download dir
	Course string    `json:"course"`
	Size   int64     `json:"size"`
	When   time.Time `json:"when"`            // when it was written
	State  string    `json:"state"`           // completed | pending | failed | unknown
	Error  string    `json:"error,omitempty"` // why it is not kept (failed)
	Key    string    `json:"key"`             // the effect: herald ledger redeliver KEY fetches it again
}

// KeptOf lists what fxs (a task's effects, newest first, as the ledger
// lists them) say about the task's files: the newest version of each,
// whether it was written, is still to come or failed.
func KeptOf(fxs []store.Effect) []Kept {
	var out []Kept
	seen := map[string]bool{}
	for _, fx := range fxs {
		if fx.Kind != Kind {
			continue
		}
		var m delivery.Message
		if json.Unmarshal(fx.Payload, &m) != nil {
			continue
		}
		f, err := FileOf(m)
		if err != nil || seen[f.ID] {
			continue
		}
		seen[f.ID] = true
		k := Kept{Name: fx.ProviderID, Course: f.Course, Size: f.Size, State: string(fx.State), Error: fx.Error, Key: fx.Key}
		if k.Name == "" {
			k.Name = relName(&f)
		}
		if fx.State == store.Completed {
			k.Error = ""
			if n := len(fx.Attempts); n > 0 {
				k.When = fx.Attempts[n-1].End
			}
		}
		out = append(out, k)
	}
	slices.SortStableFunc(out, func(a, b Kept) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SizeText prints a byte count the way people read it (1.5 MiB).
func SizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
