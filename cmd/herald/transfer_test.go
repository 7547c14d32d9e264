package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/herald-bridge/herald/tasks/transfer/transfertest"
)

// transferTasks are two declared tasks beside the fixture's news: one
// pushing to the ops webhook, one carrying a secret header, a token in
// its URL and a recipient address.
func transferTasks(fx *fixture) string {
	return "  - id: pushes\n    name: Pushes\n    source: {kind: rss, url: \"" + fx.feed.srv.URL + "/pushes.xml\"}\n    schedule: every 30m\n    notify: [ops]\n" +
		"  - id: private\n    name: Private calendar\n    source: {kind: ical, url: \"" + fx.feed.srv.URL + "/cal.ics?token=urlsecret123\", headers: {Authorization: \"Bearer hdrsecret456\"}}\n" +
		"    schedule: every 2h\n    notify: [admin-inbox, \"inbox:telegram:5551234\"]\n"
}

// importRow is the documented `import --json` element.
type importRow struct {
	Name     string `json:"name"`
	Source   string `json:"source"`
	State    string `json:"state"`
	Task     string `json:"task"`
	Active   bool   `json:"active"`
	Detail   string `json:"detail"`
	DetailZh string `json:"detail_zh"`
}

func importStates(rows []importRow) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		out[r.Name] = r.State
	}
	return out
}

// TestI10_ExportImportRoundTripThroughTheCLI: the bundle and the OPML
// export carry no secret and no recipient address (their bytes are
// searched); a dry run of an import changes nothing; an import goes
// through the policy (a person may not use the admins' named
// recipients); and an import as another admin gives back the tasks with
// their schedules and recipients, from either form.
func TestI10_ExportImportRoundTripThroughTheCLI(t *testing.T) {
	fx := newFixture(t)
	cfg := strings.Replace(fx.config(t, transferTasks(fx)), `admins: ["console:admin"]`, `admins: ["console:admin", "console:second", "console:third"]`, 1)
	_, dataDir := startServe(t, cfg, hookSecretEnv+"="+hookSecret)
	dir := t.TempDir()
	zipPath, opmlPath := filepath.Join(dir, "tasks.zip"), filepath.Join(dir, "feeds.opml")
	cli(t, dataDir, "export", "--out", zipPath)
	cli(t, dataDir, "export", "--opml", "--out", opmlPath)
	for _, p := range []string{zipPath, opmlPath} {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts := [][]byte{raw}
		if strings.HasSuffix(p, ".zip") {
			texts = append(texts, unzipAll(t, raw)...)
		}
		for _, text := range texts {
			for _, secret := range append([]string{"urlsecret123", "hdrsecret456", "5551234", fx.rcv.srv.URL}, secretsIn(string(text))...) {
				if bytes.Contains(text, []byte(secret)) {
					t.Errorf("%s holds %q", filepath.Base(p), secret)
				}
			}
		}
	}
	opmlDoc, _ := os.ReadFile(opmlPath)
	if !strings.Contains(string(opmlDoc), `<outline type="rss" text="Pushes" xmlUrl="`+fx.feed.srv.URL+`/pushes.xml" herald:schedule="every 30m" herald:notify="ops"/>`) {
		t.Errorf("OPML lacks the self-closing outline with herald's settings:\n%s", opmlDoc)
	}

	// The first run of each declared task (its baseline) starts with the
	// service and writes the task's last outcome and next run. Only once
	// all three are recorded does nothing but an import move the list for
	// the next half hour, so the comparison below sees the dry run's
	// writes and not the scheduler's.
	for _, id := range []string{"news", "pushes", "private"} {
		waitBaseline(t, dataDir, id)
	}
	before := cli(t, dataDir, "tasks", "list", "--json")
	var dry []importRow
	cliJSON(t, dataDir, &dry, "import", zipPath, "--dry-run")
	if got := importStates(dry); got["Omni news"] != "duplicate" || got["Pushes"] != "duplicate" || got["Private calendar"] != "needs-configuration" {
		t.Errorf("dry run of the admin's own bundle: %v", got)
	}
	cliJSON(t, dataDir, &dry, "import", zipPath, "--dry-run", "--as", "telegram:777")
	if got := importStates(dry); got["Omni news"] != "refused" || got["Pushes"] != "refused" || got["Private calendar"] != "needs-configuration" {
		t.Errorf("dry run as telegram:777: %v", got)
	}
	for _, r := range dry { // each row says why in English and, from the catalogue, in Chinese
		han := func(r rune) bool { return unicode.Is(unicode.Han, r) }
		if r.Detail == "" || strings.ContainsFunc(r.Detail, han) || !strings.ContainsFunc(r.DetailZh, han) || strings.HasSuffix(r.DetailZh, "\u3002") {
			t.Errorf("row %s: detail %q / %q", r.Name, r.Detail, r.DetailZh)
		}
	}
	if after := cli(t, dataDir, "tasks", "list", "--json"); after != before {
		t.Fatalf("a dry run changed the tasks:\n%s\n%s", before, after)
	}

	var rows []importRow
	cliJSON(t, dataDir, &rows, "import", opmlPath, "--as", "console:second")
	if got := importStates(rows); len(rows) != 2 || got["Omni news"] != "imported" || got["Pushes"] != "imported" {
		t.Errorf("OPML import: %+v", rows)
	}
	cliJSON(t, dataDir, &rows, "import", zipPath, "--as", "console:third")
	if got := importStates(rows); got["Omni news"] != "imported" || got["Pushes"] != "imported" || got["Private calendar"] != "needs-configuration" {
		t.Fatalf("bundle import: %+v", rows)
	}
	for _, who := range []string{"console:second", "console:third"} {
		var mine []taskRow
		for _, r := range listTasks(t, dataDir) {
			if r.Owner == who {
				mine = append(mine, r)
			}
		}
		if len(mine) != 2 {
			t.Fatalf("%s has %d tasks: %+v", who, len(mine), mine)
		}
		for _, r := range mine {
			if r.Schedule != "every 30m" || r.State != "active" {
				t.Errorf("%s's imported task: %+v", who, r)
			}
			var d struct {
				Notify []string `json:"notify"`
			}
			if err := json.Unmarshal([]byte(cli(t, dataDir, "tasks", "show", r.ID, "--json")), &d); err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"Pushes": "ops", "Omni news": "admin-inbox"}[r.Name]; strings.Join(d.Notify, ",") != want {
				t.Errorf("%s's %s notifies %v, want %s", who, r.Name, d.Notify, want)
			}
		}
	}
	out := cli(t, dataDir, "import", zipPath, "--as", "console:third")
	if !strings.Contains(out, "duplicate") || !strings.Contains(out, "STATE") {
		t.Errorf("a second import does not say duplicate:\n%s", out)
	}
}

func unzipAll(t *testing.T, raw []byte) [][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		out = append(out, b.Bytes())
	}
	return out
}

// TestI10_HostileBundleChangesNothing: an archive with one entry that
// climbs out of its directory is refused as a whole, with the reason,
// and no task is made of its otherwise valid bundle.
func TestI10_HostileBundleChangesNothing(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := startServe(t, fx.config(t, ""), hookSecretEnv+"="+hookSecret)
	path := filepath.Join(t.TempDir(), "hostile.zip")
	os.WriteFile(path, transfertest.HostileBundle(t, "https://sneaky.example.org/feed", "../../.ssh/authorized_keys"), 0o600)
	waitBaseline(t, dataDir, "news")
	before := cli(t, dataDir, "tasks", "list", "--json")
	out, errOut, code := run(t, "import", path, "--data-dir", dataDir)
	if code != exitFailure || !strings.Contains(errOut, "archive refused") || !strings.Contains(errOut, "..") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if after := cli(t, dataDir, "tasks", "list", "--json"); after != before {
		t.Fatalf("a refused bundle changed the tasks:\n%s\n%s", before, after)
	}
}

// TestI3_BackupRestoreIsQuietAndSendsNothingTwice: a backup taken while
// a push is in flight, restored into a fresh data dir after the old
// service stopped, gives a service whose next run is quiet (nothing is
// announced again) and which sends no push a second time; the webhook
// receiver counts what arrives. A backup taken from the stopped service's
// data dir restores to one that owes nothing. Restoring over a data dir
// in use, or a non-empty one, is refused. On bbolt and on Redis.
func TestI3_BackupRestoreIsQuietAndSendsNothingTwice(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		fx := newFixture(t)
		cfg := writeConfig(t, fx.config(t, transferTasks(fx)))
		backupRestore(t, fx, [3]string{cfg, cfg, cfg})
	})
	t.Run("redis", func(t *testing.T) {
		url := replicaRedisURL(t)
		fx := newFixture(t)
		var cfgs [3]string
		for i := range cfgs {
			// Each service gets a key prefix of its own: a run must not
			// find another run's tasks or scheduling leases.
			yaml := fx.config(t, transferTasks(fx))
			for _, r := range [][2]string{
				{"driver: bolt", "driver: redis"},
				{`url: "redis://127.0.0.1:6379/0"`, fmt.Sprintf("url: %q", url)},
				{`key_prefix: "herald:"`, fmt.Sprintf("key_prefix: %q", replicaPrefix(t, url))},
			} {
				if !strings.Contains(yaml, r[0]) {
					t.Fatalf("the reference config no longer has %s", r[0])
				}
				yaml = strings.Replace(yaml, r[0], r[1], 1)
			}
			cfgs[i] = writeConfig(t, yaml)
		}
		backupRestore(t, fx, cfgs)
	})
}

// backupRestore runs the service on cfgs[0], restores its live backup
// with cfgs[1] and its offline one with cfgs[2].
func backupRestore(t *testing.T, fx *fixture, cfgs [3]string) {
	env := hookSecretEnv + "=" + hookSecret
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startServeAt(t, cfgs[0], dataDir, env)
	waitBaseline(t, dataDir, "pushes")
	// The baseline's own notice is an effect too: count from it.
	var base int
	eventually(t, "the baseline notice was sent", func() bool {
		st := countStates(t, dataDir, "pushes")
		base = st["completed"]
		return base > 0 && st["pending"] == 0
	})
	got := len(fx.rcv.deliveries())
	fx.feed.addItem("g1", "First")
	cli(t, dataDir, "tasks", "run", "pushes")
	eventually(t, "the first push arrived", func() bool {
		return countStates(t, dataDir, "pushes")["completed"] == base+1 && len(fx.rcv.deliveries()) == got+1
	})

	hit := fx.rcv.holdAll()
	fx.feed.addItem("g2", "Second")
	cli(t, dataDir, "tasks", "run", "pushes")
	select {
	case <-hit:
	case <-time.After(startBound):
		t.Fatal("the second push never reached the receiver")
	}
	backupPath := filepath.Join(t.TempDir(), "herald-backup.zip")
	cli(t, dataDir, "backup", "--out", backupPath) // the second push is in flight now
	if st, err := os.Stat(backupPath); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("the backup, which holds secrets, is open to others: %v %v", st.Mode(), err)
	}
	fx.rcv.release()
	eventually(t, "both pushes completed", func() bool { return countStates(t, dataDir, "pushes")["completed"] == base+2 })

	_, errOut, code := runEnv(t, []string{env}, "restore", backupPath, "--config", p.cfgPath, "--data-dir", dataDir)
	if code != exitFailure || !strings.Contains(errOut, "serves this data dir") {
		t.Fatalf("restore over a data dir in use: exit %d: %s", code, errOut)
	}
	if c := p.signal(syscall.SIGTERM); c != 0 {
		t.Fatalf("herald exited %d", c)
	}
	_, errOut, code = runEnv(t, []string{env}, "restore", backupPath, "--config", p.cfgPath, "--data-dir", dataDir)
	if code != exitFailure || !strings.Contains(errOut, "not empty") && !strings.Contains(errOut, "already holds herald keys") {
		t.Fatalf("restore over a used data dir (on Redis: its keys): exit %d: %s", code, errOut)
	}
	// Once stopped, the backup is taken from the data dir itself: nothing
	// is in flight or can be sent after it.
	offlinePath := filepath.Join(t.TempDir(), "offline-backup.zip")
	if out, errOut, code := runEnv(t, []string{env}, "backup", "--out", offlinePath, "--config", p.cfgPath, "--data-dir", dataDir); code != 0 || !strings.Contains(out, "with herald stopped") {
		t.Fatalf("offline backup: exit %d\n%s%s", code, out, errOut)
	}
	fresh := filepath.Join(t.TempDir(), "data")
	if out, errOut, code := runEnv(t, []string{env}, "restore", backupPath, "--config", cfgs[1], "--data-dir", fresh); code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
	}

	p2 := startServeAt(t, cfgs[1], fresh, env)
	// The push in flight at the backup may have arrived (it did): it is
	// not sent again, it is unknown.
	eventually(t, "the interrupted push is recovered", func() bool {
		st := countStates(t, fresh, "pushes")
		return st["completed"] == base+1 && st["unknown"] == 1
	})
	var rec struct {
		Outcome string `json:"outcome"`
		Effects int    `json:"effects"`
	}
	out := cli(t, fresh, "tasks", "run", "pushes", "--json")
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Outcome != "unchanged" || rec.Effects != 0 {
		t.Fatalf("first run after the restore: %s", out)
	}
	if st := countStates(t, fresh, "pushes"); st["pending"] != 0 || len(st) != 2 {
		t.Fatalf("ledger after the restore: %v", st)
	}
	if n := len(fx.rcv.deliveries()); n != got+2 {
		t.Fatalf("the receiver got %d pushes, want %d", n, got+2)
	}
	p2.cmd.Process.Kill() // only its address is wanted back
	<-p2.done

	// The offline backup restores to a service that owes nothing: every
	// push completed, none unknown, and again nothing is announced.
	moved := filepath.Join(t.TempDir(), "data")
	if out, errOut, code := runEnv(t, []string{env}, "restore", offlinePath, "--config", cfgs[2], "--data-dir", moved); code != 0 {
		t.Fatalf("restore of the offline backup: exit %d\n%s%s", code, out, errOut)
	}
	startServeAt(t, cfgs[2], moved, env)
	if out := cli(t, moved, "tasks", "run", "pushes", "--json"); json.Unmarshal([]byte(out), &rec) != nil || rec.Outcome != "unchanged" || rec.Effects != 0 {
		t.Fatalf("first run after restoring the offline backup: %s", out)
	}
	if st := countStates(t, moved, "pushes"); st["completed"] != base+2 || len(st) != 1 {
		t.Fatalf("ledger after restoring the offline backup: %v", st)
	}
	if n := len(fx.rcv.deliveries()); n != got+2 {
		t.Fatalf("the receiver got %d pushes, want %d", n, got+2)
	}
}

func countStates(t *testing.T, dataDir, task string) map[string]int {
	t.Helper()
	var fxs []effectRow
	cliJSON(t, dataDir, &fxs, "ledger", "show", task)
	out := map[string]int{}
	for _, f := range fxs {
		out[f.State]++
	}
	return out
}
