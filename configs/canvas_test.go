package configs

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestLoad_CanvasTaskTakesItsTokenFromAVariable(t *testing.T) {
	cfg, err := LoadEnv(filepath.Join("testdata", "canvas-task.yaml"), env("CANVAS_TOKEN", "7~canvas-secret"))
	assertNoSecret(t, cfg, err, "7~canvas-secret")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Tasks[0].Source
	if s.Kind != "canvas" || s.Token != "7~canvas-secret" || !slices.Equal(s.Courses, []string{"12345", "678"}) ||
		!slices.Equal(s.Watch, []string{"assignments", "announcements"}) {
		t.Fatalf("source = kind %q courses %v watch %v (token set: %v)", s.Kind, s.Courses, s.Watch, s.Token != "")
	}
}
