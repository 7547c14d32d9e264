package moodle

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// files lists the course's files through core_course_get_contents: every
// module content of type "file", an item whose identity is the module
// and the file's path in it. A site that does not let the token read
// course contents leaves the course's files out; it does not fail the run.
func (c *client) files(ctx context.Context, host string, id int64, course string) ([]watch.Item, error) {
	res, err := c.call(ctx, "core_course_get_contents", url.Values{"courseid": {strconv.FormatInt(id, 10)}})
	if watch.ClassOf(err) == watch.Permission {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []watch.Item
	for _, sec := range res.Array() {
		for _, mod := range sec.Get("modules").Array() {
			for _, f := range mod.Get("contents").Array() {
				if f.Get("type").String() != "file" {
					continue
				}
				out = append(out, file(host, course, mod, f))
			}
		}
	}
	return out, nil
}

func file(host, course string, mod, f gjson.Result) watch.Item {
	name := f.Get("filename").String()
	path := f.Get("filepath").String() + name
	modified := f.Get("timemodified").String()
	fileURL := f.Get("fileurl").String()
	// The listing may carry the token in fileurl already; it is added
	// again when the file is fetched, never stored with the item.
	if u, err := url.Parse(fileURL); err == nil {
		q := u.Query()
		q.Del("token")
		u.RawQuery = q.Encode()
		fileURL = u.String()
	}
	return watch.Item{
		ID:     "moodle:" + host + ":file:" + mod.Get("id").String() + ":" + strings.TrimPrefix(path, "/"),
		Title:  course + ": " + name,
		URL:    mod.Get("url").String(),
		Digest: kind.Digest(name, f.Get("filesize").String(), modified),
		File: &watch.File{ID: mod.Get("id").String() + path, Name: name, Course: course, Size: f.Get("filesize").Int(),
			Modified: modified, ContentType: f.Get("mimetype").String(), URL: fileURL},
	}
}
