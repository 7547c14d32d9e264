package main

import (
	"fmt"
	"io"
	"strings"
)

// helpFor runs `herald help NAME`: the command's own --help, or a usage
// error naming the closest command when NAME is none.
func helpFor(name string, stdin io.Reader, stdout, stderr io.Writer) int {
	for _, c := range commands() {
		if c.name == name {
			return c.run(newEnv(c, stdin, stdout, stderr), []string{"--help"})
		}
	}
	fmt.Fprintf(stderr, "herald help: unknown command %q%s\nRun 'herald --help' for the list of commands.\n", name, didYouMean(name))
	return exitUsage
}

// didYouMean is " (did you mean X?)" for the command closest to name,
// when one is close enough to be a slip of the keyboard, else "".
func didYouMean(name string) string {
	best, bestD := "", 0
	for _, c := range commands() {
		d := editDistance(strings.ToLower(name), c.name)
		if best == "" || d < bestD {
			best, bestD = c.name, d
		}
	}
	if best == "" || bestD > max(1, len(best)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance counts the single-letter insertions, deletions,
// substitutions and swaps of neighbours that turn a into b.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
