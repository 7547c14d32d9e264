package render

import "strings"

// line is one rendered line: its markup, and the same content without
// markup for the rare line too long to fit a part on its own.
type line struct{ markup, plain string }

// packer joins lines into parts of at most limit, as size measures text
// the way the platform's limit counts it (size must add up:
// size(a+b) == size(a)+size(b)). Parts break between lines; a line too
// long for any part is cut, markup-free, across as many parts as it needs,
// starting in the room left in the current one.
type packer struct {
	limit int
	brk   string           // ends a line
	size  func(string) int // how the limit counts
	// cut is the byte length of the longest prefix of plain text that
	// fits in limit, ending where the platform allows a cut.
	cut func(s string, limit int) int
}

func (p packer) pack(lines []line) []string {
	brk := p.size(p.brk)
	var parts []string
	var cur strings.Builder
	n := 0 // size of cur
	flush := func() {
		s := cur.String()
		for p.brk != "" && strings.HasSuffix(s, p.brk) { // the break before a blank line
			s = strings.TrimSuffix(s, p.brk)
		}
		if s != "" {
			parts = append(parts, s)
		}
		cur.Reset()
		n = 0
	}
	for _, l := range lines {
		sep := 0
		if n > 0 {
			sep = brk
		}
		ln := p.size(l.markup)
		if ln > p.limit {
			rest := l.plain
			if room := p.limit - n - sep; room > 0 {
				if head := rest[:p.cut(rest, room)]; head != "" {
					if sep > 0 {
						cur.WriteString(p.brk)
					}
					cur.WriteString(head)
					n += sep + p.size(head)
					rest = rest[len(head):]
				}
			}
			for rest != "" {
				flush()
				head := rest[:p.cut(rest, p.limit)]
				if head == "" { // the limit holds not even one character
					return []string{""}
				}
				cur.WriteString(head)
				n = p.size(head)
				rest = rest[len(head):]
			}
			continue
		}
		if n+sep+ln > p.limit {
			flush()
			sep = 0
		}
		if sep > 0 {
			cur.WriteString(p.brk)
		}
		cur.WriteString(l.markup)
		n += sep + ln
	}
	flush()
	if len(parts) == 0 {
		return []string{""}
	}
	return parts
}
