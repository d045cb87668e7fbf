// Package agentcli finds and runs the real GitHub Copilot CLI, OpenAI
// Codex CLI, Gemini CLI and OpenCode the way wharf's tests run agent CLIs: a throwaway HOME, their
// telemetry and update checks off, and their outbound HTTP(S) sent to a
// closed loopback port, so that only loopback servers the test starts are
// reachable.
//
// The machine-wide managed files Copilot CLI and Codex read
// (/etc/github-copilot, /etc/codex) are written only by tests running as
// root with CI=true, under the lock of package claudetest, which every
// agent CLI test takes. Gemini CLI and OpenCode read theirs from a path a
// variable names (CLI.ManagedOverride), which touches nothing machine-wide.
package agentcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/processtest"
)

// An Agent is one of the CLIs this package runs.
type Agent struct {
	// Name is the CLI's command name: copilot, codex, gemini or opencode.
	Name string
	// Package and Version are the npm package and the version .ci/run
	// installs.
	Package, Version string
	// EnvVar names the binary ($WHARF_COPILOT, $WHARF_CODEX).
	EnvVar string
	// ManagedFile is the machine-wide managed configuration the CLI reads
	// on Linux, with no override.
	ManagedFile string
	env         func(home string) []string
}

// closedProxy is a loopback port nothing listens on (discard): a request
// the CLI sends through its proxy fails at once instead of leaving the
// machine.
const closedProxy = "http://127.0.0.1:9"

func baseEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"HTTPS_PROXY=" + closedProxy, "HTTP_PROXY=" + closedProxy, "https_proxy=" + closedProxy, "http_proxy=" + closedProxy,
		"ALL_PROXY=" + closedProxy, "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1",
		"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1", "TERM=dumb", "DO_NOT_TRACK=1"}
}

// Copilot is GitHub Copilot CLI. COPILOT_OFFLINE=true turns off GitHub
// authentication, telemetry, web tools and auto-update (its `copilot help
// environment`); COPILOT_AUTO_UPDATE=false says the same of updates, and a
// provider on a closed loopback port stands for the model it never calls.
var Copilot = Agent{Name: "copilot", Package: "@github/copilot", Version: "1.0.102", EnvVar: "WHARF_COPILOT",
	ManagedFile: "/etc/github-copilot/managed-settings.json",
	env: func(home string) []string {
		return append(baseEnv(home), "COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false",
			"COPILOT_PROVIDER_BASE_URL="+closedProxy)
	}}

// Codex is OpenAI Codex CLI. Its telemetry and update check are settings,
// not environment: Home writes them into the throwaway ~/.codex/config.toml
// ([analytics] enabled = false, check_for_update_on_startup = false, no
// OpenTelemetry exporter) before the first run.
var Codex = Agent{Name: "codex", Package: "@openai/codex", Version: "0.171.0", EnvVar: "WHARF_CODEX",
	ManagedFile: "/etc/codex/requirements.toml",
	env: func(home string) []string {
		return append(baseEnv(home), "CODEX_HOME="+filepath.Join(home, ".codex"))
	}}

// CodexQuietConfig is what Home writes into a throwaway ~/.codex/config.toml.
const CodexQuietConfig = "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n[otel]\nexporter = \"none\"\nlog_user_prompt = false\n"

// Gemini is Google Gemini CLI. Its usage statistics and update checks are
// settings: Home writes them off into the throwaway ~/.gemini/settings.json
// (GeminiQuietSettings). GEMINI_CLI_TRUST_WORKSPACE=true answers its
// workspace-trust question, which `extensions install` otherwise waits on.
// Its system settings file is the one override a test may point
// elsewhere: GEMINI_CLI_SYSTEM_SETTINGS_PATH (see CLI.SystemSettings).
var Gemini = Agent{Name: "gemini", Package: "@google/gemini-cli", Version: "0.61.0", EnvVar: "WHARF_GEMINI",
	ManagedFile: "/etc/gemini-cli/settings.json",
	env: func(home string) []string {
		return append(baseEnv(home), "GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_API_KEY=wharf-test-no-model",
			"GOOGLE_GEMINI_BASE_URL="+closedProxy, "npm_config_registry="+closedProxy)
	}}

// GeminiQuietSettings is what Home writes into a throwaway
// ~/.gemini/settings.json: no usage statistics, telemetry or update check.
const GeminiQuietSettings = `{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}}` + "\n"

// OpenCode is OpenCode. OPENCODE_DISABLE_AUTOUPDATE and
// OPENCODE_DISABLE_MODELS_FETCH turn off its update check and model list
// download; it asks the npm registry for its default plugins at every
// start, so npm_config_registry points at the closed loopback port.
var OpenCode = Agent{Name: "opencode", Package: "opencode-ai", Version: "1.18.33", EnvVar: "WHARF_OPENCODE",
	ManagedFile: "/etc/opencode/opencode.json",
	env: func(home string) []string {
		return append(baseEnv(home), "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_SHARE=1", "npm_config_registry="+closedProxy, "NPM_CONFIG_REGISTRY="+closedProxy)
	}}

// CLI is one found agent CLI.
type CLI struct {
	Agent
	Bin string
	// Extra is appended to the environment of every run (an override
	// path a test sets, such as GEMINI_CLI_SYSTEM_SETTINGS_PATH).
	Extra []string
}

// Find returns the agent's CLI: $<EnvVar>, else the copy .ci/run installs
// under $HOME/.cache/wharf-ci/<name>-<version>. Absent, the test skips,
// unless WHARF_REQUIRE_AGENTS=1 (CI), where it fails.
func Find(t testing.TB, a Agent) *CLI {
	t.Helper()
	p := os.Getenv(a.EnvVar)
	if p == "" {
		if home, err := os.UserHomeDir(); err == nil {
			c := filepath.Join(home, ".cache/wharf-ci", a.Name+"-"+a.Version, "node_modules/.bin", a.Name)
			if _, err := os.Stat(c); err == nil {
				p = c
			}
		}
	}
	if p == "" {
		if os.Getenv("WHARF_REQUIRE_AGENTS") == "1" {
			t.Fatalf("WHARF_REQUIRE_AGENTS=1 but no %s CLI: set %s (.ci/run installs %s@%s with npm)", a.Name, a.EnvVar, a.Package, a.Version)
		}
		t.Skipf("no %s CLI (set %s, or npm install %s@%s into ~/.cache/wharf-ci/%s-%s); skipping the test with the real %s",
			a.Name, a.EnvVar, a.Package, a.Version, a.Name, a.Version, a.Name)
	}
	return &CLI{Agent: a, Bin: p}
}

// Home is a new throwaway HOME for the CLI, removed when the test ends.
// (Codex warns at each run that it makes no helper links under the
// temporary directory; the plugin commands do not need them.)
func (c *CLI) Home(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	if c.Name == "codex" {
		if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(CodexQuietConfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if c.Name == "gemini" {
		if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(GeminiQuietSettings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// Env is the environment every run of the CLI gets, with home as HOME.
func (c *CLI) Env(home string) []string { return append(c.env(home), c.Extra...) }

// Run runs the CLI with args in dir and returns its combined output and
// exit code. A run that cannot start, or outlives five minutes, fails the
// test naming the command.
func (c *CLI) Run(t testing.TB, home, dir string, args ...string) (string, int) {
	t.Helper()
	return c.run(t, home, dir, true, args)
}

// Stdout is Run keeping only standard output (for --json).
func (c *CLI) Stdout(t testing.TB, home, dir string, args ...string) (string, int) {
	t.Helper()
	return c.run(t, home, dir, false, args)
}

// Must is Run failing the test on a non-zero exit.
func (c *CLI) Must(t testing.TB, home, dir string, args ...string) string {
	t.Helper()
	out, code := c.Run(t, home, dir, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit %d\n%s", c.Name, strings.Join(args, " "), code, out)
	}
	return out
}

func (c *CLI) run(t testing.TB, home, dir string, stderr bool, args []string) (string, int) {
	t.Helper()
	return processtest.Output(t, 5*time.Minute, stderr, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, c.Bin, args...)
		cmd.Dir = dir
		cmd.Env = c.Env(home)
		return cmd
	})
}

// Version is what `<cli> --version` prints, trimmed.
func (c *CLI) Version(t testing.TB) string {
	t.Helper()
	out, code := c.Stdout(t, c.Home(t), "", "--version")
	if code != 0 {
		t.Fatalf("%s --version exited %d: %s", c.Name, code, out)
	}
	return strings.TrimSpace(out)
}

// CanWriteManaged reports whether this test may write the CLI's managed
// file under /etc: only as root with CI=true. Otherwise it says why not.
func CanWriteManaged() (bool, string) {
	if os.Geteuid() != 0 || os.Getenv("CI") != "true" {
		return false, "the managed file is machine-wide under /etc; it is written only as root with CI=true"
	}
	return true, ""
}

// PutManaged writes b as the CLI's managed file (making its directory if
// needed) and restores what was there when the test ends. The caller holds
// claudetest.Lock exclusively.
func PutManaged(t testing.TB, file string, b []byte) {
	t.Helper()
	dir := filepath.Dir(file)
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir) })
	}
	old, err := os.ReadFile(file)
	had := err == nil
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if had {
			os.WriteFile(file, old, 0o644)
		} else {
			os.Remove(file)
		}
	})
}

// ManagedOverride puts b where this CLI reads its managed configuration
// through the override the CLI itself offers, for this CLI value's runs
// only, and says why not when it cannot: Gemini CLI reads
// GEMINI_CLI_SYSTEM_SETTINGS_PATH only when the file and every directory
// above it are owned by root and writable by nobody else, so the file goes
// under a fresh directory in root's home (removed when the test ends), and
// only a test running as root can use it; OpenCode reads opencode.json in
// OPENCODE_TEST_MANAGED_CONFIG_DIR. Copilot CLI and Codex have no
// override (use PutManaged).
func (c *CLI) ManagedOverride(t testing.TB, b []byte) (bool, string) {
	t.Helper()
	switch c.Name {
	case "gemini":
		if os.Geteuid() != 0 {
			return false, "Gemini CLI reads system settings only from a root-owned path; not running as root"
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return false, "no home directory for a root-owned settings path: " + err.Error()
		}
		for d := home; ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				return false, err.Error()
			}
			if fi.Mode().Perm()&0o022 != 0 {
				return false, d + " is writable by group or others, which Gemini CLI refuses above its system settings"
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		dir, err := os.MkdirTemp(home, ".wharf-gemini-system-")
		if err != nil {
			return false, err.Error()
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "settings.json")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c.Extra = append(c.Extra, "GEMINI_CLI_SYSTEM_SETTINGS_PATH="+f)
		return true, ""
	case "opencode":
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		c.Extra = append(c.Extra, "OPENCODE_TEST_MANAGED_CONFIG_DIR="+dir)
		return true, ""
	}
	return false, c.Name + " reads its managed file only from " + c.ManagedFile
}
