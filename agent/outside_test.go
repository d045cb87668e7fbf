package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// embedderMain is the whole of a program outside wharf: it imports only
// wharf's public packages, opens a Runtime over the home it is given,
// under its own policy layer (which forces on a plugin the machine's
// managed layer denies), and prints what loaded.
const embedderMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/plugin"
)

func main() {
	home, rules := os.Args[1], os.Args[2]
	pol, err := agent.LoadPolicy(rules)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r, err := agent.Open(agent.Options{Home: home, Policy: pol})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer r.Close()
	set, err := r.Load(context.Background(), agent.CacheOnly)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, p := range set.Plugins() {
		fmt.Println("plugin", p.ID, p.Version, p.Status, p.Components)
	}
	for _, c := range set.ComponentsOf(plugin.KindCommand) {
		fmt.Println("command", c.Name, c.Description)
	}
}
`

// A Go module outside wharf builds against the public packages alone and
// runs a session over a real home: a bbolt registry with two installed
// plugins and a managed directory that denies one of them. The program's
// own policy layer forces that plugin on; the managed deny holds, and the
// other plugin's command is live. The program is built with wharf's test
// hooks so that the managed directory it reads is the test's, never the
// machine's.
func TestOutsideModuleOpensAHome(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program (-short)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root := sharedtest.RepoRoot(t)

	w := testworld.New(t)
	w.Materialize("hello@corp", "1.2.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "hello", "version": "1.2.0"}`,
		"commands/greet.md":          "---\ndescription: Say hello\n---\nHello.\n",
	})
	w.Materialize("blocked@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "blocked", "version": "1.0.0"}`,
		"commands/leak.md":           "---\ndescription: Leak\n---\nLeak.\n",
	})
	w.SetEnabled("hello@corp", true)
	w.SetEnabled("blocked@corp", true)
	testworld.WriteTree(t, w.Managed, map[string]string{"org.rego": "package wharf.admin.managed\n\n" +
		"deny contains \"blocked@corp is not approved\" if { input.action == \"load\"; input.plugin == \"blocked@corp\" }\n"})
	// The program opens the registry itself: the world lets go of it.
	if err := w.Store.Close(); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "embedder.json")
	if err := os.WriteFile(rules, []byte(`{"enabledPlugins": {"blocked@corp": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	mod := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	// The module's go line and requirements are wharf's, so that Go loads
	// the same pruned module graph, lazily, and reads no go.mod file the
	// main module's build did not. With wharf alone it would resolve the
	// graph afresh: a dependency whose go.mod predates graph pruning then
	// has Go read every go.mod that one names, which a fresh module cache
	// does not hold.
	wharfMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(wharfMod), "\ngo ")
	if !ok {
		t.Fatal("wharf's go.mod has no go line")
	}
	files := map[string]string{
		"go.mod": "module example.com/embedder\n\ngo " + rest +
			"\nrequire github.com/wharfhq/wharf v0.0.0\n\nreplace github.com/wharfhq/wharf => " + root + "\n",
		// The module's sums are wharf's: the build resolves nothing new.
		"go.sum":  string(sum),
		"main.go": embedderMain,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(mod, "embedder")
	build := exec.Command(goBin, "build", "-tags", "wharf_testhooks", "-o", bin, ".")
	build.Dir = mod
	// Offline: the module cache the main module's build filled is enough.
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOSUMDB=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the outside module: %v\n%s", err, out)
	}
	// It imports only public packages: go list names every wharf package
	// the program depends on, and none is internal to the program.
	list := exec.Command(goBin, "list", "-f", "{{.ImportPath}} {{.Imports}}", ".")
	list.Dir = mod
	list.Env = build.Env
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(strings.Trim(strings.SplitN(strings.TrimSpace(string(out)), " ", 2)[1], "[]")) {
		if strings.Contains(imp, "/internal") {
			t.Fatalf("the program imports %s", imp)
		}
	}

	run := exec.Command(bin, w.Home, rules)
	run.Env = append(os.Environ(), "WHARF_TEST_SYSTEM_MANAGED_DIR="+w.Managed)
	got, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the outside program: %v\n%s", err, got)
	}
	want := "plugin blocked@corp 1.0.0 failed 0\n" +
		"plugin hello@corp 1.2.0 active 1\n" +
		"command hello:greet Say hello\n"
	if string(got) != want {
		t.Fatalf("the outside program printed:\n%s\nwant:\n%s", got, want)
	}
}
