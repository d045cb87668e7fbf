package source

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func execGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	return cmd
}

// gitCmd runs the git binary in dir with a fixed identity and no user config.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := execGit(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// testRepo is a git repository with two commits on main, an annotated tag v1
// on the first, and a branch "feature".
type testRepo struct {
	work    string // non-bare working repository
	bare    string // bare clone served to wharf
	first   string
	second  string
	feature string
}

func newTestRepo(t *testing.T, bareAt string) *testRepo {
	t.Helper()
	work := t.TempDir()
	gitCmd(t, work, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(work, ".claude-plugin/plugin.json"), `{"name":"tools","version":"1.0.0"}`, 0o644)
	writeFile(t, filepath.Join(work, "bin/run.sh"), "#!/bin/sh\necho v1\n", 0o755)
	writeFile(t, filepath.Join(work, "plugins/deploy/commands/ship.md"), "ship it\n", 0o644)
	writeFile(t, filepath.Join(work, "plugins/deploy/README.md"), "deploy\n", 0o644)
	writeFile(t, filepath.Join(work, "outside.txt"), "not part of the subdir\n", 0o644)
	if err := os.Symlink("bin/run.sh", filepath.Join(work, "run")); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, work, "add", "-A")
	gitCmd(t, work, "commit", "-q", "-m", "first")
	r := &testRepo{work: work, first: gitCmd(t, work, "rev-parse", "HEAD")}
	gitCmd(t, work, "tag", "-a", "v1", "-m", "v1")
	writeFile(t, filepath.Join(work, "bin/run.sh"), "#!/bin/sh\necho v2\n", 0o755)
	gitCmd(t, work, "commit", "-q", "-am", "second")
	r.second = gitCmd(t, work, "rev-parse", "HEAD")
	gitCmd(t, work, "checkout", "-q", "-b", "feature")
	writeFile(t, filepath.Join(work, "feature.txt"), "feature\n", 0o644)
	gitCmd(t, work, "add", "-A")
	gitCmd(t, work, "commit", "-q", "-m", "feature")
	r.feature = gitCmd(t, work, "rev-parse", "HEAD")
	gitCmd(t, work, "checkout", "-q", "main")
	if err := os.MkdirAll(filepath.Dir(bareAt), 0o755); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, work, "clone", "-q", "--bare", work, bareAt)
	r.bare = bareAt
	return r
}

// sandbox returns an empty destination inside a parent directory that holds
// nothing else, so a test can check that nothing was written beside it.
func sandbox(t *testing.T) (parent, dest string) {
	t.Helper()
	parent = t.TempDir()
	dest = filepath.Join(parent, "dest")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	return parent, dest
}

func assertOnlyDest(t *testing.T, parent string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "dest" {
			t.Errorf("%s was written outside the destination", filepath.Join(parent, e.Name()))
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantSourceErr checks err is a materialization source error wrapping target.
func wantSourceErr(t *testing.T, err, target error) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error wrapping %v, got nil", target)
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerMaterialization || pe.Type != plugin.TypeSource {
		t.Fatalf("want *plugin.Error{materialization, source-error}, got %T %v", err, err)
	}
	if !errors.Is(err, target) {
		t.Fatalf("want error wrapping %v, got %v", target, err)
	}
	if !strings.Contains(err.Error(), "p@m") {
		t.Errorf("error %q does not name the plugin", err)
	}
}

func fetchTo(t *testing.T, f *Fetcher, src plugin.Source, dest string) (*Result, error) {
	t.Helper()
	return f.Fetch(context.Background(), Request{Plugin: "p@m", Source: src, Dest: dest})
}
