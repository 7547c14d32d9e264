package datadir

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// childEnv names the data dir a re-executed test binary locks.
const childEnv = "HERALD_DATADIR_TEST_CHILD"

// TestHelperChildHoldsLock is not a test: run as a child process (see
// startChild) it takes the lock, publishes its pid, says "locked" and
// holds the lock until stdin closes or it is killed.
func TestHelperChildHoldsLock(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("child helper")
	}
	if _, err := Lock(dir); err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	if err := WriteAdmin(dir, AdminRecord{Addr: "127.0.0.1:1", Token: NewToken(), PID: os.Getpid(), Scheme: "http"}); err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0) // exits holding the lock: the kernel releases it
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startChild(t *testing.T, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChildHoldsLock$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("child said %q, %v", line, err)
	}
	return &child{cmd: cmd, stdin: stdin}
}

func TestLockTwiceRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	l, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	_, err = Lock(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another herald serves this data dir") {
		t.Fatalf("second Lock = %v, want ErrLocked", err)
	}
	if err := WriteAdmin(dir, AdminRecord{Addr: "127.0.0.1:9", Token: "tok", PID: 4242, Scheme: "http"}); err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid 4242") || strings.Contains(err.Error(), "tok") {
		t.Fatalf("second Lock with an admin record = %v, want ErrLocked naming pid 4242", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	l2, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	_ = l2.Unlock()
}

func TestLockRefusedAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, dir)
	_, err := Lock(dir)
	want := fmt.Sprintf("pid %d", c.cmd.Process.Pid)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Lock while a child holds it = %v, want ErrLocked naming %s", err, want)
	}
	_ = c.stdin.Close() // the child exits
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	l, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after the child exited: %v", err)
	}
	_ = l.Unlock()
}

func TestStaleLockAfterSIGKILLDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, dir)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	for _, name := range []string{LockFile, AdminFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("killed child should leave %s behind: %v", name, err)
		}
	}
	l, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after SIGKILL: %v", err)
	}
	defer l.Unlock()
	rec, err := ReadAdmin(dir)
	if err != nil || rec.PID != c.cmd.Process.Pid {
		t.Fatalf("stale record = %+v, %v", rec, err)
	}
}

func TestAdminRecord(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadAdmin(dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("ReadAdmin without a record = %v, want ErrNotRunning", err)
	}
	for _, rec := range []AdminRecord{
		{Addr: "127.0.0.1:8080", Token: NewToken(), PID: 100, Scheme: "http"},
		{Addr: "127.0.0.1:8443", Token: NewToken(), PID: 101, Scheme: "https"},
	} {
		if err := WriteAdmin(dir, rec); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dir, AdminFile))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("admin.json mode = %v, %v; want 0600", fi.Mode().Perm(), err)
		}
		got, err := ReadAdmin(dir)
		if err != nil || got != rec {
			t.Fatalf("ReadAdmin = %+v, %v; want %+v", got, err, rec)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("data dir holds %d entries, want only admin.json (no temp files)", len(entries))
	}
	if err := RemoveAdmin(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAdmin(dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("ReadAdmin after remove = %v", err)
	}
	if err := RemoveAdmin(dir); err != nil {
		t.Fatalf("RemoveAdmin twice: %v", err)
	}
}

func TestI10_CorruptAdminRecordErrorHidesToken(t *testing.T) {
	dir := t.TempDir()
	const token = "s3cr3t-token-value"
	if err := os.WriteFile(filepath.Join(dir, AdminFile), []byte(`{"token":"`+token+`",`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadAdmin(dir)
	if err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("ReadAdmin of a torn record = %v", err)
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	raw, err := hex.DecodeString(a)
	if err != nil || len(raw) != 32 {
		t.Fatalf("token %q is not 256 bits of hex", a)
	}
	if a == b {
		t.Fatal("two tokens are equal")
	}
}

// FuzzReadAdmin feeds arbitrary admin.json contents to ReadAdmin: it must
// not panic, and a refused record's error never echoes the file.
func FuzzReadAdmin(f *testing.F) {
	f.Add([]byte(`{"addr":"127.0.0.1:8080","token":"abc","pid":12,"scheme":"http"}`))
	f.Add([]byte(`{"token":`))
	f.Add([]byte(``))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, AdminFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadAdmin(dir)
		if err != nil && len(data) > 8 && strings.Contains(err.Error(), string(data)) {
			t.Fatalf("error echoes the record: %v", err)
		}
	})
}

// TestInstance_LastsAcrossRestartsNotAcrossFreshDirs: the identity a
// chat session holds on to is the same each time the data dir is opened,
// and another for a data dir made afresh at the same path.
func TestInstance_LastsAcrossRestartsNotAcrossFreshDirs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	first, err := Instance(dir)
	if err != nil || first == "" {
		t.Fatalf("Instance = %q, %v", first, err)
	}
	again, err := Instance(dir)
	if err != nil || again != first {
		t.Fatalf("Instance on reopen = %q, %v; want %q", again, err, first)
	}
	if fi, err := os.Stat(filepath.Join(dir, InstanceFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("instance file: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fresh, err := Instance(dir)
	if err != nil || fresh == first {
		t.Fatalf("Instance of a fresh data dir = %q, %v; want one other than %q", fresh, err, first)
	}
}
