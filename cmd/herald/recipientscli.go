package main

import (
	"fmt"
	"strings"
	"time"

	webconsole "github.com/herald-bridge/herald/webhook/console"
)

// herald recipients list|enable NAME, and herald ledger redeliver
// --recipient NAME (SPEC §21).

func cmdRecipients(e *env, args []string) int {
	pos, code, ok := e.parseSub(args, "list", "enable")
	if !ok {
		return code
	}
	switch {
	case len(pos) == 1 && pos[0] == "list":
		return callTable(e, "recipients.list", struct{}{}, 30*time.Second, "RECIPIENT\tKIND\tSTATE\tLAST SUCCESS\tFAILURES\tLAST ERROR",
			func(r webconsole.RecipientRow) []string {
				state := r.State
				if r.Reason != "" {
					state += " (" + r.Reason + ")"
				}
				return []string{r.Name, r.Kind, state, stamp(r.LastSuccess), fmt.Sprint(r.Failures), dash(r.LastError)}
			})
	case len(pos) == 2 && pos[0] == "enable":
		r, code, done := call[webconsole.RecipientRow](e, "recipients.enable", recipientIn{Name: pos[1]}, 10*time.Second)
		if done {
			return code
		}
		fmt.Fprintf(e.stdout, "%s is enabled; its new pushes are sent again. To send what it missed: herald ledger redeliver --recipient %s\n", r.Name, r.Name)
		return exitOK
	}
	return e.usage("want list or enable NAME")
}

// stamp is a time as the tables show one, "-" when never.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("01-02 15:04:05")
}

// rangeOpts are herald ledger redeliver's range flags.
type rangeOpts struct {
	recipient, state, since, until string
	dryRun                         bool
}

func rangeFlags(e *env) *rangeOpts {
	r := &rangeOpts{}
	e.flags.StringVar(&r.recipient, "recipient", "", "with redeliver: replay this recipient's ended pushes by range")
	e.flags.StringVar(&r.state, "state", "", "with --recipient: failed or unknown (default: both)")
	e.flags.StringVar(&r.since, "since", "", "with --recipient: pushes claimed at or after T (RFC 3339, or YYYY-MM-DD)")
	e.flags.StringVar(&r.until, "until", "", "with --recipient: pushes claimed before T (RFC 3339, or YYYY-MM-DD)")
	e.flags.BoolVar(&r.dryRun, "dry-run", false, "with --recipient: list what would be sent again, send nothing")
	return r
}

// parseWhen reads a --since or --until value.
func parseWhen(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: want RFC 3339 (2026-12-01T08:00:00Z) or a date (2026-12-01)", flag, v)
}

// redeliverRange lists the recipient's pushes in range, then, unless
// --dry-run, queues each once after confirmation.
func redeliverRange(e *env, o *rangeOpts, yes bool) int {
	in := rangeIn{Recipient: o.recipient, DryRun: true}
	if o.state != "" {
		in.States = []string{o.state}
	}
	var err error
	if in.Since, err = parseWhen("since", o.since); err != nil {
		return e.usage(err.Error())
	}
	if in.Until, err = parseWhen("until", o.until); err != nil {
		return e.usage(err.Error())
	}
	var listed webconsole.RangeResult
	if code := e.do("ledger.redeliver_range", in, &listed, 2*time.Minute); code != exitOK {
		return code
	}
	if e.json && o.dryRun {
		e.printJSON(listed)
		return exitOK
	}
	if !e.json {
		rows := make([][]string, 0, len(listed.Effects))
		for _, f := range listed.Effects {
			rows = append(rows, []string{f.Key, f.State, f.Task, stamp(f.CreatedAt), dash(f.Error)})
		}
		table(e.stdout, "EFFECT\tSTATE\tTASK\tCLAIMED\tERROR", rows)
	}
	if o.dryRun {
		fmt.Fprintf(e.stdout, "dry run: %s would be sent again to %s\n", plural(len(listed.Effects), "push", "pushes"), o.recipient)
		return exitOK
	}
	if len(listed.Effects) == 0 && !e.json {
		fmt.Fprintf(e.stdout, "nothing to send again to %s\n", o.recipient)
		return exitOK
	}
	if code, ok := confirm(e, yes, "redeliver sends these pushes again",
		fmt.Sprintf("Send these %d pushes to %s again, each once with its original id?", len(listed.Effects), o.recipient)); !ok {
		return code
	}
	in.DryRun = false
	res, code, done := call[webconsole.RangeResult](e, "ledger.redeliver_range", in, 2*time.Minute)
	if done {
		return code
	}
	fmt.Fprintf(e.stdout, "%s queued again for %s\n", plural(res.Queued, "push", "pushes"), strings.TrimSpace(o.recipient))
	return exitOK
}
