package transfer

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/bundle"
	"github.com/herald-bridge/herald/tasks/transfer/transfertest"
)

const (
	alice = "telegram:1001"
	root  = "console:root"
)

func newManager(t *testing.T, maxTasks int) (*tasks.Manager, store.Store) {
	return transfertest.Manager(t, tasks.Policy{
		Admins: []string{root}, Requesters: []string{"telegram:*"}, AllowedHosts: []string{"*.example.edu"},
		Named: map[string]bool{"ops": true}, Limits: tasks.Limits{MaxTasks: maxTasks},
	})
}

func rss(name, url string) bundle.Task {
	return bundle.Task{Name: name, Source: bundle.Source{Kind: "rss", URL: url}}
}

// catalog is every record's id and revision: what a write would change.
func catalog(t *testing.T, st store.Store) string {
	recs, err := st.Catalog().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.ID + "@" + strconv.FormatUint(r.Revision, 10) + " ")
	}
	return b.String()
}

var _ text.Coded = problem{}

func states(rows []Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, string(r.State))
	}
	return strings.Join(out, ",")
}

// TestI8_ImportedTasksAreRequestsUnderPolicy: each imported task is a
// request of the importer decided by the policy as a chat request is,
// and each gets one honest state. A dry run answers the same table and
// changes nothing in the catalog.
func TestI8_ImportedTasksAreRequestsUnderPolicy(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t, 50)
	if _, err := m.Submit(ctx, tasks.Submission{Principal: alice, URL: "https://news.example.edu/old.xml", Kind: "rss"}); err != nil {
		t.Fatal(err)
	}
	token := rss("course", "https://lms.example.edu/api")
	token.Needs = []string{"token"}
	toOps := rss("for ops", "https://ops.example.edu/feed")
	toOps.Notify = []string{"ops"}
	noSuch := rss("to nobody", "https://b.example.edu/feed")
	noSuch.Notify = []string{"nosuch"}
	list := []bundle.Task{
		rss("allowed host", "https://a.example.edu/feed"),
		rss("other host", "https://blog.example.org/feed"),
		token,
		noSuch,
		{Name: "gopher", Source: bundle.Source{Kind: "gopher", URL: "https://g.example.edu/"}},
		rss("watched already", "https://NEWS.example.edu/old.xml"),
		rss("twice in the file", "https://a.example.edu/feed"),
		toOps,
		{Name: "bad schedule", Source: bundle.Source{Kind: "rss", URL: "https://c.example.edu/feed"}, Schedule: "whenever"},
		{Name: "reminders", Source: bundle.Source{Kind: "ical", URL: "https://cal.example.edu/x.ics"}, RemindBefore: []string{"3d", "2h"}},
	}
	want := "imported,imported,needs-configuration,needs-configuration,unsupported,duplicate,duplicate,refused,unsupported,imported"

	before := catalog(t, st)
	dry, err := Import(ctx, m, Request{Principal: alice, DryRun: true}, list)
	if err != nil {
		t.Fatal(err)
	}
	if got := states(dry); got != want {
		t.Errorf("dry run states\n got %s\nwant %s", got, want)
	}
	if after := catalog(t, st); after != before {
		t.Fatalf("a dry run changed the catalog: %q -> %q", before, after)
	}

	rows, err := Import(ctx, m, Request{Principal: alice}, list)
	if err != nil {
		t.Fatal(err)
	}
	if got := states(rows); got != want {
		t.Errorf("states\n got %s\nwant %s", got, want)
	}
	for i := range rows {
		if rows[i].State != dry[i].State || rows[i].Active != dry[i].Active {
			t.Errorf("row %d: dry run said %s/%v, import did %s/%v", i, dry[i].State, dry[i].Active, rows[i].State, rows[i].Active)
		}
	}
	if !rows[0].Active || rows[1].Active {
		t.Errorf("allowed host active=%v, other host active=%v; want true, false", rows[0].Active, rows[1].Active)
	}
	if zh, ok := text.Error("zh", rows[7].Why); rows[7].Detail == "" || !ok || zh == rows[7].Detail || !strings.Contains(rows[3].Detail, "nosuch") {
		t.Errorf("details: %+v (Chinese %q) / %+v", rows[7], zh, rows[3])
	}
	all, _ := m.List(ctx, root)
	if len(all) != 4 { // the one before, and three imported
		t.Fatalf("%d tasks after the import, want 4", len(all))
	}
	for _, tk := range all {
		if tk.Owner != alice || tk.Origin != tasks.OriginChat {
			t.Errorf("task %s owner %s origin %s", tk.ID, tk.Owner, tk.Origin)
		}
		if tk.Name == "reminders" && len(tk.RemindBefore) != 2 {
			t.Errorf("reminders lost: %v", tk.RemindBefore)
		}
	}
	again, _ := Import(ctx, m, Request{Principal: alice}, list[:2])
	if got := states(again); got != "duplicate,duplicate" {
		t.Errorf("importing again: %s", got)
	}
}

// TestI8_ImportOutsidePolicyRefused: a principal who may not request
// gets every task refused, and nothing is written.
func TestI8_ImportOutsidePolicyRefused(t *testing.T) {
	m, st := newManager(t, 50)
	rows, err := Import(context.Background(), m, Request{Principal: "feishu:ou_stranger"}, []bundle.Task{rss("a", "https://a.example.edu/feed")})
	if err != nil || states(rows) != "refused" {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if c := catalog(t, st); c != "" {
		t.Fatalf("catalog %q", c)
	}
}

// TestI7_ImportStopsAtTheTaskLimit: the limit refuses the tasks beyond
// it, in a dry run as in the import.
func TestI7_ImportStopsAtTheTaskLimit(t *testing.T) {
	m, _ := newManager(t, 2)
	list := []bundle.Task{rss("a", "https://a.example.edu/1"), rss("b", "https://a.example.edu/2"), rss("c", "https://a.example.edu/3")}
	for _, dry := range []bool{true, false} {
		rows, err := Import(context.Background(), m, Request{Principal: alice, DryRun: dry}, list)
		if err != nil || states(rows) != "imported,imported,refused" {
			t.Errorf("dry=%v: %s %v", dry, states(rows), err)
		}
	}
}
