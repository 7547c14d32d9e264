package egress

import (
	"net/url"
	"strings"
)

// PathWithin reports whether u's path lies under prefix, compared segment
// by segment: "/feeds" covers "/feeds" and "/feeds/a" but not
// "/feeds-private". The path is judged as a server could read it: dot
// segments are resolved, including percent-encoded ones ("%2e%2e"), an
// encoded slash ("%2f") or a backslash may separate segments, and a dot
// segment followed by ";params" ("..;") counts as one. The path must lie
// under prefix in every one of these readings; one climbing above the root
// lies nowhere. An empty prefix (or "/") covers every path.
func PathWithin(prefix string, u *url.URL) bool {
	want, ok := cleanSegments(strings.Split(prefix, "/"))
	if !ok {
		return false
	}
	if len(want) == 0 {
		return true
	}
	// Read one: segments as the URL delimits them, each then decoded.
	raw := strings.Split(u.EscapedPath(), "/")
	for i, s := range raw {
		if d, err := url.PathUnescape(s); err == nil {
			raw[i] = d
		}
	}
	// Read two: the decoded path, where %2f and \ separate too.
	decoded := strings.Split(strings.ReplaceAll(u.Path, `\`, "/"), "/")
	for _, segs := range [][]string{raw, decoded} {
		got, ok := cleanSegments(segs)
		if !ok || !hasSegmentPrefix(got, want) {
			return false
		}
	}
	return true
}

// cleanSegments drops empty and "." segments and resolves ".."; ok is
// false when ".." climbs above the root.
func cleanSegments(segs []string) ([]string, bool) {
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		dot, _, _ := strings.Cut(s, ";")
		switch dot {
		case "", ".":
			if dot == "" && s != "" {
				out = append(out, s) // ";x" is a segment of its own
			}
		case "..":
			if len(out) == 0 {
				return nil, false
			}
			out = out[:len(out)-1]
		default:
			out = append(out, s)
		}
	}
	return out, true
}

func hasSegmentPrefix(got, want []string) bool {
	if len(got) < len(want) {
		return false
	}
	for i, w := range want {
		if got[i] != w {
			return false
		}
	}
	return true
}
