package conversation

import (
	"context"
	"fmt"
	"strings"

	"github.com/herald-bridge/herald/tasks/download"
)

// Downloads is what /downloads needs of the task manager: the files a
// course-site task keeps, for its owner or an admin.
type Downloads interface {
	Downloads(ctx context.Context, who, id string) ([]download.Kept, error)
}

// maxListedFiles bounds one /downloads answer; the CLI lists them all.
const maxListedFiles = 30

// downloads answers /downloads <task>: name, size, course and when each
// kept file was written, and how many are still to come or failed.
func (t *turn) downloads(id string) []Reply {
	dl, ok := t.c.o.Tasks.(Downloads)
	if !ok {
		return t.reply("downloads.this_herald_keeps_no")
	}
	kept, err := dl.Downloads(t.ctx, t.m.Principal, id)
	if err != nil {
		return t.failed(err)
	}
	var b strings.Builder
	waiting, failed, shown := 0, 0, 0
	for _, k := range kept {
		switch k.State {
		case "completed":
		case "pending":
			waiting++
			continue
		default:
			failed++
			continue
		}
		if shown++; shown > maxListedFiles {
			continue
		}
		course := ""
		if k.Course != "" {
			course = t.tr("downloads.sep") + k.Course
		}
		fmt.Fprintf(&b, "%s (%s%s) %s\n", k.Name, download.SizeText(k.Size), course, t.when(k.When))
	}
	if shown == 0 && waiting == 0 && failed == 0 {
		return t.reply("downloads.no_course_files_kept", id)
	}
	if shown > maxListedFiles {
		fmt.Fprintf(&b, t.tr("downloads.and_more_herald_downloads"), shown-maxListedFiles, id)
	}
	if waiting > 0 {
		fmt.Fprintf(&b, t.tr("downloads.still_to_download"), waiting)
	}
	if failed > 0 {
		fmt.Fprintf(&b, t.tr("downloads.could_not_be_downloaded"), failed)
	}
	return []Reply{{Text: strings.TrimSpace(b.String())}}
}
