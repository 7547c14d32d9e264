package main

import (
	"errors"
	"fmt"
	"syscall"
)

// listenError says, when the address is taken, which address it is and
// how to choose another, beside the system's own words.
func listenError(err error, addr, config string) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	return fmt.Errorf("%w\nSomething already listens on %s (another herald, or another program). "+
		"Stop it, or choose another address with server.listen in %s (e.g. listen: 127.0.0.1:9090); "+
		"with make run: make run CONFIG=FILE, the README's \"Another port or data dir for make run\"",
		err, addr, config)
}
