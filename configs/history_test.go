package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHistory_DefaultsAndBounds(t *testing.T) {
	cfg, err := loadString(t, "server: {listen: 127.0.0.1:8080}\n", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.History.Retention.D() != 90*24*time.Hour || cfg.History.MaxTurns != 10000 {
		t.Fatalf("defaults = %+v", cfg.History)
	}
	cfg, err = loadString(t, "history:\n  retention: 30d\n  max_turns: 500\n", noEnv)
	if err != nil || cfg.History.Retention.D() != 30*24*time.Hour || cfg.History.MaxTurns != 500 {
		t.Fatalf("set = %+v, %v", cfg.History, err)
	}
	_, err = loadString(t, "history:\n  retention: 10m\n  max_turns: 1000000\n  keep: 3\n", noEnv)
	for _, want := range []string{"herald.yaml:2: history.retention: must be between 1h and 3650d",
		"herald.yaml:3: history.max_turns: must be between 1 and 100000", "herald.yaml:4"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestPersonaFile_ReadSizeCappedWithLine(t *testing.T) {
	src := "assistant:\n  endpoint: https://api.example.com/v1/chat/completions\n  api_key: k\n  model: m\n  persona_file: persona.md\n"
	dir := t.TempDir()
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(dir, "persona.md"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func() (*Config, error) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "herald.yaml"), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadEnv(filepath.Join(dir, "herald.yaml"), noEnv)
	}
	_, err := load()
	if err == nil || !strings.Contains(err.Error(), "herald.yaml:5: assistant.persona_file: cannot read persona.md") {
		t.Fatalf("missing persona: %v", err)
	}
	write("# Voice\nWarm and brief.\n")
	cfg, err := load()
	if err != nil || cfg.Assistant.Persona != "# Voice\nWarm and brief.\n" {
		t.Fatalf("persona = %q, %v", cfg.Assistant.Persona, err)
	}
	write(strings.Repeat("x", MaxPersonaBytes+1))
	if _, err := load(); err == nil || !strings.Contains(err.Error(), "herald.yaml:5: assistant.persona_file: persona.md is 16385 bytes; at most 16384") {
		t.Fatalf("oversized persona: %v", err)
	}
}
