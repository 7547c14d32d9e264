package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGitignoreKeepsTheConfigAndSecretsOutOfCommits: the files a person
// creates in the checkout by following the README (herald.yaml) and by
// herald init (its default secrets file) are ignored by git, while the
// example config stays tracked.
func TestGitignoreKeepsTheConfigAndSecretsOutOfCommits(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(git, "-C", root, "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	ignored := func(name string) bool {
		// check-ignore exits 0 for an ignored path, 1 for one that is not.
		return exec.Command(git, "-C", root, "check-ignore", "-q", "--no-index", name).Run() == nil
	}
	for _, name := range []string{"herald.yaml", defaultSecretsFile, "prod.secrets.yaml"} {
		if !ignored(name) {
			t.Errorf("%s in the checkout is not ignored", name)
		}
	}
	if ignored("configs/herald.example.yaml") {
		t.Error("the example config is ignored")
	}
}
