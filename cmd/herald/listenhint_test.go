package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestServe_AddressInUseNamesItAndHowToChooseAnother: when another
// program holds server.listen, serve exits saying which address is taken
// and where to choose another.
func TestServe_AddressInUseNamesItAndHowToChooseAnother(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	cfg := writeConfig(t, adjustExample(t, addr, nil))
	_, errOut, code := run(t, "serve", "--config", cfg, "--data-dir", filepath.Join(t.TempDir(), "data"))
	if code == exitOK {
		t.Fatalf("serve on a taken address exited 0:\n%s", errOut)
	}
	for _, want := range []string{
		"address already in use",
		"Something already listens on " + addr,
		"server.listen in " + cfg,
	} {
		if !strings.Contains(errOut, want) {
			t.Fatalf("serve on a taken address does not say %q:\n%s", want, errOut)
		}
	}
}
