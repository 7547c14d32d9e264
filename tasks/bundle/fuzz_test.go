package bundle

import (
	"bytes"
	"testing"
)

func FuzzRead(f *testing.F) {
	t := &testing.T{}
	f.Add(archive(t, good()))
	f.Add(archive(t, good(), entry{name: "../x", data: []byte("x")}))
	f.Add(archive(t, entry{name: FileName, data: []byte("format: 2\n")}))
	f.Add([]byte(validYAML))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, b); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatalf("our own bundle does not read back: %v", err)
		}
		if len(back.Tasks) != len(b.Tasks) {
			t.Fatalf("%d tasks became %d", len(b.Tasks), len(back.Tasks))
		}
	})
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(validYAML))
	f.Add([]byte("format: 1\ntasks: [{source: {url: x, courses: [a, b]}, needs: [token]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Unmarshal(data)
		if err != nil {
			return
		}
		y, err := Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Unmarshal(y); err != nil {
			t.Fatalf("our own YAML does not read back: %v\n%s", err, y)
		}
	})
}
