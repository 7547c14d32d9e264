package main

import (
	"fmt"
	"io"

	"github.com/herald-bridge/herald/configs/closest"
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
	names := make([]string, 0, len(commands()))
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if best := closest.Name(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return ""
}
