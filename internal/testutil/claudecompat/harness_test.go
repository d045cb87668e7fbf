package claudecompat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// loaded is what one tool made of one plugin.
type loaded struct {
	Loaded   bool
	Version  string
	Commands []string
	Skills   []string
	Agents   []string
	Hooks    []string
	MCP      []string
	LSP      []string
	Why      string // why it did not load
}

// fields lists the compared fields of l by name, in report order.
func (l loaded) fields() map[string]string {
	j := func(s []string) string {
		c := slices.Clone(s)
		sort.Strings(c)
		return strings.Join(c, ", ")
	}
	return map[string]string{"loaded": fmt.Sprint(l.Loaded), "version": l.Version, "commands": j(l.Commands), "skills": j(l.Skills),
		"agents": j(l.Agents), "hooks": j(l.Hooks), "mcp": j(l.MCP), "lsp": j(l.LSP)}
}

var fieldOrder = []string{"loaded", "version", "commands", "skills", "agents", "hooks", "mcp", "lsp"}

// diff returns the fields where a and b differ, as "field: a | b". Two
// plugins neither tool loads agree whatever the rest says.
func diff(claude, wharf loaded) []string {
	if !claude.Loaded && !wharf.Loaded {
		return nil
	}
	if claude.Loaded != wharf.Loaded {
		return []string{fmt.Sprintf("loaded: claude %v (%s) | wharf %v (%s)", claude.Loaded, claude.Why, wharf.Loaded, wharf.Why)}
	}
	c, w := claude.fields(), wharf.fields()
	var out []string
	for _, f := range fieldOrder {
		if c[f] != w[f] {
			out = append(out, fmt.Sprintf("%s: claude [%s] | wharf [%s]", f, c[f], w[f]))
		}
	}
	return out
}

// isolated reports whether `unshare -rn` can run a command without any
// network, so claude runs with no route to anywhere.
func isolated() bool {
	return exec.Command("unshare", "-rn", "true").Run() == nil
}

// tool runs one CLI (claude or wharf) with a throwaway home.
type tool struct {
	t       *testing.T
	bin     string
	env     []string
	cwd     string
	netless bool
}

func (c *tool) cmd(ctx context.Context, args ...string) *exec.Cmd {
	name, argv := c.bin, args
	if c.netless {
		name, argv = "unshare", append([]string{"-rn", c.bin}, args...)
	}
	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.Dir = c.cwd
	cmd.Env = c.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs the tool and returns its stdout and combined output.
func (c *tool) run(args ...string) (stdout, all string, err error) {
	c.t.Helper()
	// A bound per command, so that a hung CLI fails naming the command
	// rather than at the test binary's deadline.
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	cmd := c.cmd(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), out.String() + errb.String(), err
}

func newClaude(t *testing.T, bin string) *tool {
	home := t.TempDir()
	return &tool{t: t, bin: bin, cwd: home, netless: isolated(), env: []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1", "TERM=dumb",
		// A session needs a key to start; its API calls go to a closed
		// loopback port (and, under unshare, to no network at all).
		"ANTHROPIC_API_KEY=sk-ant-offline-conformance", "ANTHROPIC_BASE_URL=http://127.0.0.1:9",
	}}
}

func newWharf(t *testing.T, bin string) *tool {
	home := t.TempDir()
	managed := t.TempDir()
	return &tool{t: t, bin: bin, cwd: home, env: []string{
		"HOME=" + home, "WHARF_HOME=" + filepath.Join(home, ".wharf"), "WHARF_MANAGED_DIR=" + managed, "PATH=" + os.Getenv("PATH"),
		"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1", "TERM=dumb",
	}}
}

// market is a marketplace copy both tools read: its name and the plugins
// with a relative source (the others need the network).
type market struct {
	Dir     string
	Name    string
	Plugins []string
}

// copyMarket copies src to a temp dir under the name given (real names may
// be reserved by either tool for their owners) and lists its relative
// plugins. With commit, the copy becomes a git checkout of one commit.
func copyMarket(t *testing.T, src, name string, commit bool) market {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dst, ".claude-plugin", "marketplace.json")
	b, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", mf, err)
	}
	doc["name"] = name
	out, _ := json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(mf, out, 0o644); err != nil {
		t.Fatal(err)
	}
	m := market{Dir: dst, Name: name}
	plugins, _ := doc["plugins"].([]any)
	for _, p := range plugins {
		e, _ := p.(map[string]any)
		n, _ := e["name"].(string)
		if s, ok := e["source"].(string); ok && n != "" && strings.HasPrefix(s, "./") {
			m.Plugins = append(m.Plugins, n)
		}
	}
	if commit {
		gitCommit(t, dst)
	}
	return m
}

func gitCommit(t *testing.T, dir string) {
	t.Helper()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "wharf", Email: "wharf@example.com", When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if _, err := w.Commit("cases", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies regular files and symlinks (as symlinks).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.IsDir():
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
		return nil
	})
}

// lastJSON decodes the last line of out that is a JSON object.
func lastJSON(out string, v any) error {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "{") {
			return json.Unmarshal([]byte(lines[i]), v)
		}
	}
	return fmt.Errorf("no JSON line in %q", out)
}

// claudeLoads installs every plugin of m with claude and reads back what
// it loads: the version from `plugin list --json`, hook events, MCP and LSP
// servers from `plugin details`, and commands, skills and agents from the
// init message of a session that never reaches a model (hooks and MCP
// servers off, so nothing of the plugins runs).
func claudeLoads(t *testing.T, c *tool, m market) map[string]loaded {
	t.Helper()
	if _, all, err := c.run("plugin", "marketplace", "add", m.Dir, "--json"); err != nil {
		t.Fatalf("claude plugin marketplace add %s: %v\n%s", m.Dir, err, all)
	}
	res := map[string]loaded{}
	for _, p := range m.Plugins {
		id := p + "@" + m.Name
		var r struct{ Outcome, Message string }
		out, all, _ := c.run("plugin", "install", id, "--json")
		if err := lastJSON(out, &r); err != nil {
			t.Fatalf("claude plugin install %s: %v\n%s", id, err, all)
		}
		res[id] = loaded{Why: r.Message}
	}
	out, all, err := c.run("plugin", "list", "--json")
	if err != nil {
		t.Fatalf("claude plugin list: %v\n%s", err, all)
	}
	var list []struct {
		ID      string   `json:"id"`
		Version string   `json:"version"`
		Errors  []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("claude plugin list --json: %v\n%s", err, out)
	}
	for _, e := range list {
		if r, ok := res[e.ID]; ok {
			r.Version = e.Version
			if len(e.Errors) > 0 {
				r.Why = strings.Join(e.Errors, "; ")
			}
			res[e.ID] = r
		}
	}
	init := claudeInit(t, c)
	ns := map[string]string{} // namespace -> id
	for _, p := range init.Plugins {
		if r, ok := res[p.Source]; ok {
			r.Loaded = true
			res[p.Source] = r
			ns[p.Name] = p.Source
		}
	}
	skills := map[string]bool{}
	for _, s := range init.Skills {
		skills[s] = true
	}
	for _, s := range init.SlashCommands {
		if id, local, ok := owner(ns, s); ok {
			r := res[id]
			if skills[s] {
				r.Skills = append(r.Skills, local)
			} else {
				r.Commands = append(r.Commands, local)
			}
			res[id] = r
		}
	}
	for _, s := range init.Skills {
		if id, local, ok := owner(ns, s); ok && !slices.Contains(init.SlashCommands, s) {
			r := res[id]
			r.Skills = append(r.Skills, local)
			res[id] = r
		}
	}
	for _, s := range init.Agents {
		if id, local, ok := owner(ns, s); ok {
			r := res[id]
			r.Agents = append(r.Agents, local)
			res[id] = r
		}
	}
	for id, r := range res {
		if !r.Loaded {
			continue
		}
		out, all, err := c.run("plugin", "details", id)
		if err != nil {
			t.Fatalf("claude plugin details %s: %v\n%s", id, err, all)
		}
		inv, err := parseDetails(out)
		if err != nil {
			t.Fatalf("claude plugin details %s: %v\n%s", id, err, out)
		}
		r.Hooks, r.MCP, r.LSP = inv["Hooks"], inv["MCP servers"], inv["LSP servers"]
		res[id] = r
	}
	return res
}

func owner(ns map[string]string, name string) (string, string, bool) {
	n, local, ok := strings.Cut(name, ":")
	if !ok {
		return "", "", false
	}
	id, ok := ns[n]
	return id, local, ok
}

type initMessage struct {
	Type          string   `json:"type"`
	Subtype       string   `json:"subtype"`
	SlashCommands []string `json:"slash_commands"`
	Skills        []string `json:"skills"`
	Agents        []string `json:"agents"`
	Plugins       []struct {
		Name   string `json:"name"`
		Source string `json:"source"`
	} `json:"plugins"`
}

// claudeInit starts a print-mode session and reads its init message, then
// stops it: the session never gets an answer (no model is reachable), and
// the settings passed turn hooks off and leave MCP servers unstarted.
func claudeInit(t *testing.T, c *tool) initMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := c.cmd(ctx, "-p", "say nothing", "--output-format", "stream-json", "--verbose", "--max-turns", "1",
		"--strict-mcp-config", "--mcp-config", `{"mcpServers":{}}`, "--settings", `{"disableAllHooks":true}`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var m initMessage
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "system" && m.Subtype == "init" {
			return m
		}
	}
	t.Fatalf("claude -p printed no init message: %v\n%s", sc.Err(), errb.String())
	return initMessage{}
}

// detailsLine matches a component line of `claude plugin details`:
// "  Hooks (2)  PreToolUse, Stop  (harness-only ...)".
var detailsLine = regexp.MustCompile(`^\s+(Skills|Agents|Hooks|MCP servers|LSP servers) \((\d+)\)(?:\s{2}(.*?))?(?:\s{2}\([^()]*\))?\s*$`)

func parseDetails(out string) (map[string][]string, error) {
	inv := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		m := detailsLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var names []string
		if m[3] != "" {
			names = strings.Split(m[3], ", ")
		}
		if fmt.Sprint(len(names)) != m[2] {
			return nil, fmt.Errorf("%q: %s names for a count of %s", line, fmt.Sprint(len(names)), m[2])
		}
		inv[m[1]] = names
	}
	if len(inv) < 5 {
		return nil, fmt.Errorf("no component inventory")
	}
	return inv, nil
}

// wharfLoads installs every plugin of m with wharf and reads back what it
// loads: versions from `wharf list --json`, components from `wharf agent
// components --json`.
func wharfLoads(t *testing.T, w *tool, m market) map[string]loaded {
	t.Helper()
	if _, all, err := w.run("marketplace", "add", m.Dir); err != nil {
		t.Fatalf("wharf marketplace add %s: %v\n%s", m.Dir, err, all)
	}
	res := map[string]loaded{}
	for _, p := range m.Plugins {
		id := p + "@" + m.Name
		_, all, err := w.run("install", id)
		r := loaded{}
		if err != nil {
			r.Why = strings.TrimSpace(all)
		}
		res[id] = r
	}
	out, all, err := w.run("list", "--json")
	if err != nil {
		t.Fatalf("wharf list: %v\n%s", err, all)
	}
	var list []struct {
		ID, Version, Status string
		Errors              []string
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("wharf list --json: %v\n%s", err, out)
	}
	for _, e := range list {
		if r, ok := res[e.ID]; ok {
			r.Version, r.Loaded = e.Version, e.Status == "active"
			if !r.Loaded {
				r.Why = e.Status + ": " + strings.Join(e.Errors, "; ")
			}
			res[e.ID] = r
		}
	}
	out, all, err = w.run("agent", "components", "--json")
	if err != nil {
		t.Fatalf("wharf agent components: %v\n%s", err, all)
	}
	var comps []struct{ Kind, Name, Plugin string }
	if err := json.Unmarshal([]byte(out), &comps); err != nil {
		t.Fatalf("wharf agent components --json: %v\n%s", err, out)
	}
	for _, c := range comps {
		r, ok := res[c.Plugin]
		if !ok {
			continue
		}
		// "ns:name" for prompts, "plugin:ns:name" for servers, "ns:Event"
		// for hooks: the local name is what follows the namespace.
		local := strings.TrimPrefix(c.Name, "plugin:")
		if _, rest, ok := strings.Cut(local, ":"); ok {
			local = rest
		}
		switch c.Kind {
		case "command":
			r.Commands = append(r.Commands, local)
		case "skill":
			r.Skills = append(r.Skills, local)
		case "agent":
			r.Agents = append(r.Agents, local)
		case "hook":
			if !slices.Contains(r.Hooks, local) {
				r.Hooks = append(r.Hooks, local)
			}
		case "mcp-server":
			r.MCP = append(r.MCP, local)
		case "lsp-server":
			r.LSP = append(r.LSP, local)
		}
		res[c.Plugin] = r
	}
	return res
}
