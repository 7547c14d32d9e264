package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/herald-bridge/herald/channels/console"
)

// chatLines reads the lines of a chat session, of any length. It keeps
// at most console.MaxText+1 bytes of a line, which is enough to tell
// that the line is too long to send, and counts the rest.
type chatLines struct {
	r    *bufio.Reader
	line []byte
	n    int // the whole line's length in bytes
	err  error
}

func newChatLines(in io.Reader) *chatLines {
	return &chatLines{r: bufio.NewReaderSize(in, 64<<10)}
}

// Scan reads the next line; false at the end of input or on an error.
func (l *chatLines) Scan() bool {
	l.line, l.n = l.line[:0], 0
	for {
		frag, err := l.r.ReadSlice('\n')
		l.n += len(frag)
		if room := console.MaxText + 1 - len(l.line); room > 0 {
			l.line = append(l.line, frag[:min(room, len(frag))]...)
		}
		switch {
		case err == nil:
			l.n--
			l.line = trimNewline(l.line)
			return true
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return l.n > 0
		default:
			l.err = err
			return false
		}
	}
}

func trimNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}

// Text is the line read, without its newline.
func (l *chatLines) Text() string { return string(l.line) }

// TooLong is the answer to a line longer than a message may be, or "".
func (l *chatLines) TooLong() string {
	if l.n <= console.MaxText {
		return ""
	}
	return fmt.Sprintf("That line has %d bytes and was not sent: a message has at most %d bytes.", l.n, console.MaxText)
}

// Err is the error that ended the input, nil at its end.
func (l *chatLines) Err() error { return l.err }
