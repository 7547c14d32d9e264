// Command herald is the herald service and its command line: `herald
// serve` runs the service; every other command talks to the running
// service through its admin API (it never opens the store while the
// service runs).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
)

// Exit codes.
const (
	exitOK         = 0
	exitFailure    = 1
	exitUsage      = 2
	exitNotRunning = 3
)

// version and commit are set at build time with
// -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = "unknown"
)

type command struct {
	name    string
	args    string
	summary string
	run     func(e *env, args []string) int
}

// env is what every command gets: its streams, its flag set and the
// common flags' values.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	cmd            command
	flags          *flag.FlagSet // the command's own flags and the common ones
	config         string
	dataDir        string
	json           bool
	// dataDirFound: neither --data-dir nor HERALD_DATA_DIR named the data
	// dir; the CLI looks for the running service (discover.go).
	dataDirFound bool
	looked       []string // where discovery looked, for the not-running hint
}

func commands() []command {
	return []command{
		{"serve", "[--config FILE] [--data-dir DIR]", "run the herald service", cmdServe},
		{"check-config", "[--config FILE]", "check a config file; every problem as file:line", cmdCheckConfig},
		{"chat", "[--as NAME]", "talk to the running service as console:NAME", cmdChat},
		{"status", "", "show the running service's state (owner, store, channels)", cmdStatus},
		{"tasks", "list [--limit N] [--after ID] | show ID | pause ID | resume ID | delete ID | run ID [--no-wait] | rebaseline ID", "manage tasks", cmdTasks},
		{"requests", "list | approve ID | reject ID [REASON]", "list pending requests; decide them as console:admin", cmdRequests},
		{"ledger", "show TASK | redeliver EFFECT-ID [--yes] | redeliver --recipient NAME [--state failed|unknown] [--since T] [--until T] [--dry-run] [--yes]", "read the effect ledger; replay an effect, or a recipient's range, explicitly", cmdLedger},
		{"recipients", "list | enable NAME", "show recipients (enabled or disabled, last success, failures); turn a disabled one back on", cmdRecipients},
		{"inbox", "list PRINCIPAL | read PRINCIPAL ID|all | token PRINCIPAL", "read inboxes; issue an inbox API token", cmdInbox},
		{"console", "login [--as NAME] [--valid 10m] | logout --all", "sign in to the browser console (GET /console); end its sessions", cmdConsole},
		{"history", "search PRINCIPAL WORDS [--page N] | list PRINCIPAL [--limit N]", "read a person's or a group chat's conversation history (admins)", cmdHistory},
		{"downloads", "list TASK", "list the course files a task keeps (name, course, size, when)", cmdDownloads},
		{"doctor", "", "try every configured endpoint over its route (proxy or direct); exit 1 when any fails", cmdDoctor},
		{"send-test", "RECIPIENT", "send one test push through the whole path and print its outcome", cmdSendTest},
		{"agent", "token NAME [--out FILE] | revoke NAME | list", "issue, revoke and list agent tokens (principal agent:NAME)", cmdAgent},
		{"mcp", "--token-file FILE [--service URL]", "serve MCP on stdio for an agent holding an agent token", cmdMCP},
		{"export", "[--tasks all|PRINCIPAL] [--opml] --out FILE", "write tasks to a bundle (.zip) or their feeds to OPML; no secrets or addresses", cmdExport},
		{"import", "FILE [--as PRINCIPAL] [--dry-run]", "import a bundle or an OPML file as requests; one state per task", cmdImport},
		{"backup", "--out FILE", "write a consistent backup of the whole store (herald running or stopped)", cmdBackup},
		{"restore", "FILE", "restore a backup into a new, empty data dir (herald must not be running on it)", cmdRestore},
		{"init", "[--non-interactive] [--telegram-token T] [--feishu-app-id ID --feishu-app-secret S] [--admin P]... [--timezone TZ] [--language en|zh] [--secrets FILE] [--force]", "first run: ask the questions, write herald.yaml and its 0600 secrets file, check them", cmdInit},
		{"version", "", "print the version, the commit and the Go version (also --version)", cmdVersion},
		{"template", "preview --task ID [--recipient NAME]", "render a task's latest items as a recipient gets them (its format and template)", cmdTemplate},
	}
}

func main() {
	os.Exit(runCLI(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// runCLI runs one command line and returns its exit code.
func runCLI(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "help" {
		return helpFor(args[1], stdin, stdout, stderr)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stdout
		if len(args) == 0 {
			w = stderr
		}
		usage(w)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	global, args, bad := hoistGlobal(args)
	if bad != "" {
		fmt.Fprintf(stderr, "herald: unknown flag %s before the command\nRun 'herald --help' for the list of commands; --config, --data-dir and --json may come before or after it.\n", bad)
		return exitUsage
	}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(newEnv(c, stdin, stdout, stderr), append(args[1:], global...))
		}
	}
	names := make([]string, 0, len(commands()))
	for _, c := range commands() {
		names = append(names, c.name)
	}
	msg := fmt.Sprintf("unknown command %q%s; the commands are %s", args[0], didYouMean(args[0]), strings.Join(names, ", "))
	if slices.Contains(global, "--json") || slices.Contains(global, "-json") {
		(&env{stderr: stderr}).printError("usage", "herald: "+msg)
		return exitUsage
	}
	fmt.Fprintf(stderr, "herald: %s\nRun 'herald --help' for what each does.\n", msg)
	return exitUsage
}

// hoistGlobal takes the common flags written before the command word
// (herald --data-dir X tasks list) so they can be parsed after it, like
// any other flag. bad is the first other flag found there.
func hoistGlobal(args []string) (global, rest []string, bad string) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		switch name {
		case "json":
			global, args = append(global, args[0]), args[1:]
		case "config", "data-dir":
			if hasValue || len(args) == 1 {
				global, args = append(global, args[0]), args[1:]
			} else {
				global, args = append(global, args[0], args[1]), args[2:]
			}
		default:
			return nil, nil, args[0]
		}
	}
	return global, args, ""
}

func cmdVersion(e *env, args []string) int {
	if _, code, ok := e.parse(args); !ok {
		return code
	}
	if e.json {
		e.printJSON(map[string]string{"version": version, "commit": buildCommit(), "go": runtime.Version()})
		return exitOK
	}
	fmt.Fprintln(e.stdout, versionLine())
	return exitOK
}

func usage(w io.Writer) {
	fmt.Fprint(w, `herald watches feeds, calendars, JSON APIs and web pages for people who chat
with it in Telegram or Feishu, and pushes quiet, never-duplicated notices.

Usage:
  herald <command> [flags] [args]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Every command takes --config FILE (env HERALD_CONFIG, default herald.yaml) and
--data-dir DIR (env HERALD_DATA_DIR, default ./data); most take --json, which
prints errors as JSON too. These flags may come before or after the command.
Without --data-dir the CLI looks in ./data, then in the data dir of the last
service started by this user.
Run 'herald <command> --help' for a command's flags.

Moving tasks: 'herald export --out tasks.zip' (or --opml --out feeds.opml)
writes them without secrets or addresses; 'herald import FILE --as PRINCIPAL
--dry-run' shows what each would become, without --dry-run makes them
requests. A whole service: 'herald backup --out FILE' (while it runs, or
from its data dir once stopped: the copy to move with), then
'herald restore FILE --data-dir NEW' with no herald serving NEW.

Exit codes: 0 ok, 1 failure, 2 usage error, 3 the service is not running.
`)
}

// newEnv is the env of one run of c, with the common flags bound to it;
// c adds its own flags to e.flags before it parses.
func newEnv(c command, stdin io.Reader, stdout, stderr io.Writer) *env {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, cmd: c}
	fs := flag.NewFlagSet("herald "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.config, "config", envOr("HERALD_CONFIG", "herald.yaml"), "config file")
	fs.StringVar(&e.dataDir, "data-dir", os.Getenv("HERALD_DATA_DIR"), "data directory (default ./data)")
	fs.BoolVar(&e.json, "json", false, "machine-readable JSON output")
	fs.Usage = func() {}
	e.flags = fs
	return e
}

// parse parses the command's flags, allowing them after positional args
// too. It returns the positional args, or an exit code when parsing ended
// the command.
func (e *env) parse(args []string) ([]string, int, bool) {
	var pos []string
	for {
		err := e.flags.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(e.stdout, "%s\n\nUsage:\n  herald %s %s\n\nFlags:\n", e.cmd.sentence(), e.cmd.name, e.cmd.args)
			e.flags.SetOutput(e.stdout)
			e.flags.PrintDefaults()
			return nil, exitOK, false
		}
		if err != nil {
			return nil, e.usage(err.Error()), false
		}
		rest := e.flags.Args()
		if len(rest) == 0 {
			if e.dataDir == "" {
				e.dataDir, e.dataDirFound = defaultDataDir, true
			}
			return pos, 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseOne parses a command that takes exactly one positional arg and
// returns it; want is the usage error for any other number.
func (e *env) parseOne(args []string, want string) (string, int, bool) {
	pos, code, ok := e.parse(args)
	if !ok {
		return "", code, false
	}
	if len(pos) != 1 {
		return "", e.usage(want), false
	}
	return pos[0], exitOK, true
}

// parseOut parses a command that writes one file, which --out names, and
// takes no positional args; want is the usage error when it gets any or
// no --out.
func (e *env) parseOut(args []string, want string) (string, int, bool) {
	out := e.flags.String("out", "", "the file to write")
	pos, code, ok := e.parse(args)
	if !ok {
		return "", code, false
	}
	if len(pos) != 0 || *out == "" {
		return "", e.usage(want), false
	}
	return *out, exitOK, true
}

// parseSub parses a command whose first positional arg, when given, must
// be one of subs.
func (e *env) parseSub(args []string, subs ...string) ([]string, int, bool) {
	pos, code, ok := e.parse(args)
	if !ok {
		return nil, code, false
	}
	if len(pos) > 0 {
		if code, ok := e.subcommand(pos[0], subs...); !ok {
			return nil, code, false
		}
	}
	return pos, exitOK, true
}

// subcommand checks that sub is one of the command's subcommands, naming
// them all when it is not.
func (e *env) subcommand(sub string, subs ...string) (int, bool) {
	if slices.Contains(subs, sub) {
		return exitOK, true
	}
	return e.usage(fmt.Sprintf("unknown subcommand %q; the subcommands are %s", sub, strings.Join(subs, ", "))), false
}

// usage reports a usage error of the command, with its usage line unless
// the output is JSON.
func (e *env) usage(msg string) int {
	if e.json {
		e.printError("usage", fmt.Sprintf("herald %s: %s", e.cmd.name, msg))
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "herald %s: %s\nUsage: herald %s %s (see --help)\n", e.cmd.name, msg, e.cmd.name, e.cmd.args)
	return exitUsage
}

// sentence is the command's summary as the first line of its --help.
func (c command) sentence() string {
	return strings.ToUpper(c.summary[:1]) + c.summary[1:] + "."
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
