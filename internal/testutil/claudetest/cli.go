package claudetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/processtest"
)

// CLI is the real claude CLI, run the way every wharf test runs it: a
// throwaway HOME, telemetry, nonessential traffic and the auto-updater off,
// and, where the system lets an unprivileged user make one, inside a
// network namespace of its own so that it cannot reach any network.
type CLI struct {
	Bin string
	// Isolated reports whether each run gets its own network namespace.
	Isolated bool
}

// Find returns the claude CLI: $WHARF_CLAUDE, else claude on PATH, else
// the copy .ci/run installs under $HOME/.cache/wharf-ci/claude. Absent, the
// test skips, unless WHARF_REQUIRE_CLAUDE=1 (CI), where it fails.
func Find(t testing.TB) *CLI {
	t.Helper()
	p := os.Getenv("WHARF_CLAUDE")
	if p == "" {
		p, _ = exec.LookPath("claude")
	}
	if p == "" {
		if home, err := os.UserHomeDir(); err == nil {
			c := filepath.Join(home, ".cache/wharf-ci/claude/node_modules/.bin/claude")
			if _, err := os.Stat(c); err == nil {
				p = c
			}
		}
	}
	if p == "" {
		if os.Getenv("WHARF_REQUIRE_CLAUDE") == "1" {
			t.Fatal("WHARF_REQUIRE_CLAUDE=1 but no claude CLI: set WHARF_CLAUDE or put claude on PATH (.ci/run installs it with npm)")
		}
		t.Skip("no claude CLI (set WHARF_CLAUDE, or install @anthropic-ai/claude-code); skipping the comparison with Claude Code")
	}
	return &CLI{Bin: p, Isolated: canUnshare()}
}

var (
	unshareOnce sync.Once
	unshareOK   bool
)

// canUnshare reports whether `unshare -rn` works here (it needs user
// namespaces).
func canUnshare() bool {
	unshareOnce.Do(func() {
		if _, err := exec.LookPath("unshare"); err != nil {
			return
		}
		unshareOK = exec.Command("unshare", "-rn", "true").Run() == nil
	})
	return unshareOK
}

// Env is the environment every claude run gets, with home as HOME.
func Env(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1", "TERM=dumb"}
}

// Run runs claude with args in dir with home as HOME and returns its
// combined output and exit code. A run that cannot start, or outlives five
// minutes, fails the test naming the command.
func (c *CLI) Run(t testing.TB, home, dir string, args ...string) (string, int) {
	t.Helper()
	return c.run(t, home, dir, true, args)
}

// Stdout is Run keeping only standard output (for --json).
func (c *CLI) Stdout(t testing.TB, home, dir string, args ...string) (string, int) {
	t.Helper()
	return c.run(t, home, dir, false, args)
}

// Command is the claude command with args in dir with home as HOME, for a
// caller that runs many at once; ctx bounds it.
func (c *CLI) Command(ctx context.Context, home, dir string, args ...string) *exec.Cmd {
	name, argv := c.Bin, args
	if c.Isolated {
		name, argv = "unshare", append([]string{"-rn", c.Bin}, args...)
	}
	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.Dir = dir
	cmd.Env = Env(home)
	return cmd
}

func (c *CLI) run(t testing.TB, home, dir string, stderr bool, args []string) (string, int) {
	t.Helper()
	return processtest.Output(t, 5*time.Minute, stderr, func(ctx context.Context) *exec.Cmd {
		return c.Command(ctx, home, dir, args...)
	})
}

// Version is the first word `claude --version` prints, e.g. "2.1.332".
func (c *CLI) Version(t testing.TB) string {
	t.Helper()
	out, code := c.Run(t, t.TempDir(), "", "--version")
	if code != 0 {
		t.Fatalf("claude --version exited %d: %s", code, out)
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		t.Fatalf("claude --version printed nothing")
	}
	return f[0]
}
