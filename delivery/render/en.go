package render

import (
	"fmt"

	"github.com/herald-bridge/herald/delivery"
)

// en is the English phrasebook, the fallback for any other language.
var en = words{
	changes: func(n int, task string) string {
		if n == 1 {
			return "1 change in " + task
		}
		return fmt.Sprintf("%d changes in %s", n, task)
	},
	dueIn:          func(left, title string) string { return "Due in " + left + ": " + title },
	overdue:        func(title string) string { return "Overdue: " + title },
	more:           func(n int) string { return fmt.Sprintf("and %d more", n) },
	due:            "due",
	left:           func(left string) string { return "in " + left },
	ago:            func(ago string) string { return ago + " ago" },
	open:           "Open",
	change:         map[string]string{delivery.ChangeNew: "new", delivery.ChangeChanged: "changed", delivery.ChangeRemoved: "removed", delivery.ChangeDeadline: "deadline"},
	fallback:       "Notice",
	dateFmt:        "Mon 2 Jan 2006 15:04 MST",
	minute:         func(n int) string { return fmt.Sprintf("%d min", n) },
	hour:           func(n int) string { return fmt.Sprintf("%d h", n) },
	day:            func(n int) string { return fmt.Sprintf("%d d", n) },
	separator:      " — ",
	was:            func(title string) string { return " (was: " + title + ")" },
	dueMoved:       func(from, to string) string { return "due moved from " + from + " to " + to },
	wasDue:         func(from string) string { return "was due " + from },
	inboxFullTitle: "Your inbox is full",
	inboxFull: func(limit int) string {
		if limit == 1 {
			return "Your inbox keeps 1 item. It is full of an unread one, so the oldest unread item is " +
				"being removed to make room for a new one. Read it (/read all) to keep the newest."
		}
		return fmt.Sprintf("Your inbox keeps %d items. It is full of unread ones, so the oldest unread items are "+
			"being removed to make room for new ones. Read them (/read all) to keep the newest.", limit)
	},
	notices: map[string]notice{
		NoticeBaseline:     {"Watching", "Now watching %[1]s: %[2]d items. You will hear about changes only."},
		NoticeWatchingMany: {"Watching", "Now watching %[1]s sources (%[2]s items in all). You will hear about changes only."},
		NoticeSuspect: {"Many items changed at once", "Most items of %[1]s changed in one check, which usually means the site was redesigned " +
			"or its ids were regenerated. Nothing was pushed. To accept the new state as the baseline, run: herald tasks rebaseline %[2]s"},
		NoticeFailing:     {"Watch failing", "%[1]s failed %[2]d checks in a row (%[3]s). herald keeps trying."},
		NoticeRecovered:   {"Watch recovered", "%[1]s works again."},
		NoticeUnreachable: {"A recipient is unreachable", "Pushes for %[1]s cannot reach one of its recipients (%[2]s). Check that the bot is still in that chat."},
		NoticeDisabled: {"A recipient is disabled", "herald stopped sending to %[1]s (%[2]s): its pushes now end failed without being sent. " +
			"Fix the receiver, then turn it back on with: herald recipients enable %[1]s (or Enable in the console). " +
			"To send what it missed: herald ledger redeliver --recipient %[1]s"},
	},
	digest: func(n int) string {
		if n == 1 {
			return "Digest: 1 change"
		}
		return fmt.Sprintf("Digest: %d changes", n)
	},
	inTask:             func(task, title string) string { return task + ": " + title },
	machineSummary:     func(text string) string { return "Summary (machine-written): " + text },
	machineTranslation: func(text string) string { return "Translation (machine-written):\n" + text },
	moreInInbox: func(n int) string {
		if n == 1 {
			return "1 more waits in your inbox (/inbox)"
		}
		return fmt.Sprintf("%d more wait in your inbox (/inbox)", n)
	},
	noticeOne: map[string]string{
		NoticeBaseline:     "Now watching %[1]s: %[2]d item. You will hear about changes only.",
		NoticeWatchingMany: "Now watching %[1]s sources (%[2]s item in all). You will hear about changes only.",
		NoticeFailing:      "%[1]s failed %[2]d check (%[3]s). herald keeps trying.",
	},
}
