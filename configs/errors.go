package configs

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalid is wrapped by every *Error: the file was read but is not a
// valid configuration.
var ErrInvalid = errors.New("invalid configuration")

// Problem is one finding, located in a file.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// Error lists every problem found in a configuration, sorted by file and
// line. Messages never hold secret values.
type Error struct {
	Problems []Problem
}

// Error renders one "file:line: message" per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

// problems collects findings while loading.
type problems struct {
	main string // the config file: sorts first
	list []Problem
}

func (ps *problems) add(file string, line int, format string, args ...any) {
	ps.list = append(ps.list, Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	out := slices.Clone(ps.list)
	slices.SortStableFunc(out, func(a, b Problem) int {
		if a.File != b.File {
			if a.File == ps.main {
				return -1
			}
			if b.File == ps.main {
				return 1
			}
			return cmp.Compare(a.File, b.File)
		}
		return cmp.Compare(a.Line, b.Line)
	})
	out = slices.Compact(out)
	return &Error{Problems: out}
}

// scrub replaces any substituted variable value left in a message (a
// second line of defence: messages are written not to quote them).
func (ps *problems) scrub(values []string) {
	for i := range ps.list {
		for _, v := range values {
			if len(v) >= 3 && strings.Contains(ps.list[i].Msg, v) {
				ps.list[i].Msg = strings.ReplaceAll(ps.list[i].Msg, v, "[redacted]")
			}
		}
	}
}
