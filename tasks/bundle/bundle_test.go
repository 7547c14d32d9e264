package bundle

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/bundle/safezip"
	"github.com/herald-bridge/herald/tasks/watch"
)

// validYAML is a bundle that imports fine: every hostile archive below
// carries it, so only the archive's own shape can refuse it.
const validYAML = "format: 1\ncreated: 2026-11-02T09:00:00Z\nherald: test\ntasks:\n  - name: news\n    source: {kind: rss, url: \"https://news.example.edu/feed.xml\"}\n"

type entry struct {
	name   string
	data   []byte
	mode   fs.FileMode
	method uint16
	// lieSize, when set, is the uncompressed size written in the header.
	lieSize uint64
	// pre, when set, is data deflated already (shared by many entries).
	pre *deflate
}

// deflate is data compressed once, with the header fields it needs.
type deflate struct {
	raw  []byte
	crc  uint32
	size uint64
}

func predeflate(t *testing.T, data []byte) *deflate {
	return &deflate{raw: deflated(t, data), crc: crc32.ChecksumIEEE(data), size: uint64(len(data))}
}

func archive(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, fastDeflate)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: e.method}
		if h.Method == 0 && e.mode == 0 {
			h.Method = zip.Deflate
		}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		if e.pre != nil {
			h.CompressedSize64, h.UncompressedSize64, h.CRC32 = uint64(len(e.pre.raw)), e.pre.size, e.pre.crc
			w, err := zw.CreateRaw(h)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(e.pre.raw)
			continue
		}
		if e.lieSize != 0 {
			raw := deflated(t, e.data)
			h.CompressedSize64, h.UncompressedSize64, h.CRC32 = uint64(len(raw)), e.lieSize, 0
			w, err := zw.CreateRaw(h)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(raw)
			continue
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func fastDeflate(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) }

func deflated(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, fastDeflate)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "x", Method: zip.Deflate})
	w.Write(data)
	zw.Close()
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := zr.File[0].OpenRaw()
	raw := new(bytes.Buffer)
	raw.ReadFrom(rc)
	return raw.Bytes()
}

// lowEntropy is n bytes of two letters: it compresses about eight times,
// well under the ratio limit, so only the sizes refuse it. A block of
// 64 KiB repeats: deflate looks back 32 KiB only.
func lowEntropy(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	block := make([]byte, 64<<10)
	for i := range block {
		block[i] = "ab"[r.IntN(2)]
	}
	b := make([]byte, 0, n+len(block))
	for len(b) < n {
		b = append(b, block...)
	}
	return b[:n]
}

func noise(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func good() entry { return entry{name: FileName, data: []byte(validYAML)} }

// TestI10_HostileArchivesRefusedBeforeUse: every class of unsafe or
// oversized bundle is refused as a whole, with its reason, before any of
// it is used; the same bundle without the hostile part reads fine.
func TestI10_HostileArchivesRefusedBeforeUse(t *testing.T) {
	many := []entry{good()}
	for i := range 512 {
		many = append(many, entry{name: "notes/" + strings.Repeat("n", 1+i%7) + string(rune('a'+i%26)) + "-" + itoa(i), data: []byte("x")})
	}
	var big, wide []entry
	for i := range 3 {
		big = append(big, entry{name: "blob" + itoa(i), data: noise(3<<20, uint64(i)), method: zip.Store})
	}
	part := predeflate(t, lowEntropy(3<<20+512<<10, 1))
	for i := range 10 {
		wide = append(wide, entry{name: "part" + itoa(i), pre: part})
	}
	cases := []struct {
		name    string
		entries []entry
		want    string
	}{
		{"absolute path", []entry{good(), {name: "/etc/herald.yaml", data: []byte("x")}}, "absolute"},
		{"dot dot", []entry{good(), {name: "../herald.yaml", data: []byte("x")}}, ".."},
		{"dot dot inside", []entry{good(), {name: "a/../../b", data: []byte("x")}}, ".."},
		{"backslash", []entry{good(), {name: `..\..\evil`, data: []byte("x")}}, "backslash"},
		{"drive letter", []entry{good(), {name: "C:/evil", data: []byte("x")}}, "drive"},
		{"drive letter relative", []entry{good(), {name: "c:evil", data: []byte("x")}}, "drive"},
		{"symlink", []entry{good(), {name: "link", data: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}}, "symbolic link"},
		{"case collision", []entry{good(), {name: "HERALD-BUNDLE.yaml", data: []byte(validYAML)}}, "case"},
		{"exact duplicate", []entry{good(), good()}, "case"},
		{"more than 512 entries", many, "more than 512 entries"},
		{"more than 8 MiB compressed", append([]entry{good()}, big...), "larger than 8 MiB"},
		{"more than 32 MiB expanded", append([]entry{good()}, wide...), "expands to more than 32 MiB"},
		{"one entry over 4 MiB", []entry{good(), {name: "big", data: lowEntropy(4<<20+1, 9)}}, "larger than 4 MiB"},
		{"entry over 4 MiB under a lying header", []entry{good(), {name: "liar", data: lowEntropy(5<<20, 10), lieSize: 100}}, "longer than its header says"},
		{"compression ratio over 200", []entry{good(), {name: "bomb", data: make([]byte, 2<<20)}}, "times its size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Read(bytes.NewReader(archive(t, c.entries...)))
			if !errors.Is(err, safezip.ErrRefused) {
				t.Fatalf("read = %d tasks, %v; want refused", len(b.Tasks), err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if len(b.Tasks) != 0 {
				t.Errorf("a refused bundle yielded %d tasks", len(b.Tasks))
			}
		})
	}
	t.Run("control: the valid entry alone reads", func(t *testing.T) {
		b, err := Read(bytes.NewReader(archive(t, good(), entry{name: "notes/readme.txt", data: []byte("hello")})))
		if err != nil || len(b.Tasks) != 1 {
			t.Fatalf("read = %+v, %v", b, err)
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestI10_NewerFormatRefusedPlainly: a bundle of a newer format is not
// misread; the error says which format and what to do. YAML that is not
// a bundle herald writes (aliases, unknown keys, too many tasks) is
// refused too.
func TestI10_NewerFormatRefusedPlainly(t *testing.T) {
	y := strings.Replace(validYAML, "format: 1", "format: 7\nfuture_key: {x: 1}", 1)
	_, err := Read(bytes.NewReader(archive(t, entry{name: FileName, data: []byte(y)})))
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "format 7") || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("err = %v", err)
	}
	many := "format: 1\ntasks:\n" + strings.Repeat("  - source: {url: \"https://a.example/\"}\n", MaxTasks+1)
	alias := "format: 1\ntasks:\n  - source: {url: \"https://a.example/\"}\n    include: &x [a, b]\n  - source: {url: \"https://b.example/\"}\n    include: *x\n"
	if _, err := Unmarshal([]byte(alias)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "aliases") {
		t.Errorf("a bundle with YAML aliases (a decoding bomb's tool): %v", err)
	}
	for _, bad := range []string{many, "tasks: []\n", "format: 1\ntasks: [{name: x, unknown_key: 1}]\n", "format: [1\n", "\x00\x01"} {
		if _, err := Unmarshal([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Unmarshal(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestI10_ExportCarriesNoSecretOrAddress: a task with a token, secret
// headers, a credential in its URL and literal recipient addresses
// exports with none of them — the bytes of the archive and of its YAML
// are searched — and names what it left out.
func TestI10_ExportCarriesNoSecretOrAddress(t *testing.T) {
	secrets := []string{"7~CanvasSecretTokenValue123", "Bearer hdr-secret-42", "qs-secret-99", "pw-in-url", "telegram:chat:-100777", "feishu:user:ou_secret", "4242424242",
		"JSESSIONID=portal-cookie-77", "cas-Passw0rd-88", "2026010203"}
	tk := &tasks.Task{
		Name: "course", Owner: "telegram:4242424242", ReplyTo: "telegram:chat:4242424242",
		Source: watch.Spec{Kind: "canvas", URL: "https://lms.example.edu/api/v1?api_key=qs-secret-99&page=2", Token: secrets[0],
			Headers: map[string]string{"Authorization": secrets[1]}, Courses: []string{"101"}},
		Schedule: "every 2h", RemindBefore: []time.Duration{72 * time.Hour, 90 * time.Minute},
		Notify:  []string{"telegram:chat:4242424242", "ops", "telegram:chat:-100777", "feishu:user:ou_secret"},
		Include: []string{"exam"},
	}
	chatToken := &tasks.Task{Name: "moodle", Owner: "telegram:4242424242", Source: watch.Spec{Kind: "moodle", URL: "https://moodle.example.edu/", TokenFrom: "telegram:4242424242"}}
	feed := &tasks.Task{Name: "news", Owner: "telegram:4242424242", Source: watch.Spec{Kind: "rss", URL: "https://u:pw-in-url@news.example.edu/feed.xml"},
		Notify: []string{"inbox:telegram:4242424242"}}
	portal := &tasks.Task{Name: "portal", Owner: "console:admin", Source: watch.Spec{Kind: "html", URL: "https://portal.example.edu/notices",
		Selector: "li", Render: watch.RenderBrowser, Auth: &watch.SignIn{Login: &watch.Login{URL: "https://cas.example.edu/login",
			Form: map[string]string{"username": "2026010203", "password": "cas-Passw0rd-88"}}}}}
	cookie := &tasks.Task{Name: "cookie", Owner: "console:admin", Source: watch.Spec{Kind: "html", URL: "https://portal.example.edu/n",
		Selector: "li", Auth: &watch.SignIn{Cookie: "JSESSIONID=portal-cookie-77"}}}
	b := Bundle{Format: Format, Created: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), Herald: "test",
		Tasks: []Task{FromTask(tk), FromTask(feed), FromTask(chatToken), FromTask(portal), FromTask(cookie)}}
	var zipped bytes.Buffer
	if err := Write(&zipped, b); err != nil {
		t.Fatal(err)
	}
	y, _ := Marshal(b)
	for _, s := range secrets {
		for what, data := range map[string][]byte{"archive": zipped.Bytes(), "yaml": y} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("the %s holds %q:\n%s", what, s, y)
			}
		}
	}
	got, err := Read(bytes.NewReader(zipped.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	c := got.Tasks[0]
	wantNeeds := []string{"url parameter api_key", "token", "header Authorization", "recipient address"}
	if strings.Join(c.Needs, "|") != strings.Join(wantNeeds, "|") {
		t.Errorf("needs = %q, want %q", c.Needs, wantNeeds)
	}
	if c.Source.URL != "https://lms.example.edu/api/v1?page=2" || strings.Join(c.Notify, ",") != "ops" ||
		strings.Join(c.RemindBefore, ",") != "72h,90m" || strings.Join(c.Source.Courses, ",") != "101" || c.Schedule != "every 2h" {
		t.Errorf("round trip lost settings: %+v", c)
	}
	if m := got.Tasks[2]; strings.Join(m.Needs, ",") != "token" {
		t.Errorf("a task reading a token given in chat: needs %q", m.Needs)
	}
	for i, want := range []string{"sign-in,render browser", "sign-in"} {
		if p := got.Tasks[3+i]; strings.Join(p.Needs, ",") != want {
			t.Errorf("a task signing in: needs %q, want %q", p.Needs, want)
		}
	}
	if f := got.Tasks[1]; f.Source.URL != "https://news.example.edu/feed.xml" || len(f.Notify) != 0 || strings.Join(f.Needs, ",") != "url credentials" {
		t.Errorf("feed = %+v", f)
	}
}

// An rsshub task travels as its route, which the importer's own instances
// serve; the exporter's instance is no part of it.
func TestRSSHub_ExportCarriesTheRoute(t *testing.T) {
	got := FromTask(&tasks.Task{Name: "jwc", Schedule: "every 1h",
		Source: watch.Spec{Kind: "rsshub", URL: "https://rsshub.example.org/ustc/jwc/info", Route: "/ustc/jwc/info"}})
	if got.Source.URL != "rsshub:/ustc/jwc/info" || got.Source.Kind != "rsshub" || len(got.Needs) != 0 {
		t.Fatalf("exported source = %+v, needs %v", got.Source, got.Needs)
	}
}
