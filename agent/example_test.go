package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/plugin"
)

// An agent embeds a Runtime: it opens it under a policy, names its
// builtins, registers session plugin dirs before the first load, activates
// components through an Activator, and reloads on request.
func Example() {
	tmp, _ := os.MkdirTemp("", "wharf-example")
	defer os.RemoveAll(tmp)
	dev := filepath.Join(tmp, "dev")
	os.MkdirAll(filepath.Join(dev, "commands"), 0o755)
	os.WriteFile(filepath.Join(dev, "commands", "ship.md"), []byte("---\ndescription: Ship it\n---\nShip.\n"), 0o644)
	os.WriteFile(filepath.Join(dev, "commands", "help.md"), []byte("My help.\n"), 0o644)
	os.WriteFile(filepath.Join(dev, ".mcp.json"), []byte(`{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db"}}}`), 0o644)

	ctx := context.Background()
	// The session's policy: no layers beyond the machine's managed ones,
	// which Open reads itself.
	pol, err := agent.LoadPolicy()
	if err != nil {
		panic(err)
	}
	r, err := agent.Open(agent.Options{
		Home:     filepath.Join(tmp, "home"),
		Policy:   pol,
		Builtins: []agent.Builtin{{Kind: plugin.KindCommand, Name: "help"}},
		Activator: agent.ActivatorFunc(func(ctx context.Context, c agent.Component) (func() error, error) {
			fmt.Println("activate", c.Kind, c.Name)
			return func() error { fmt.Println("undo", c.Kind, c.Name); return nil }, nil
		}),
	})
	if err != nil {
		panic(err)
	}
	if err := r.AddPluginDir(ctx, dev); err != nil {
		panic(err)
	}
	set, err := r.Load(ctx, agent.CacheOnly)
	if err != nil {
		panic(err)
	}
	for _, s := range set.Skipped() {
		fmt.Println("skipped", s.Component.Name)
	}
	db, _ := set.Lookup(plugin.KindMCPServer, "plugin:dev:db")
	fmt.Println(db.ToolName("query"))
	r.Close()
	// Output:
	// activate command dev:ship
	// activate mcp-server plugin:dev:db
	// skipped dev:help
	// mcp__plugin_dev_db__query
	// undo mcp-server plugin:dev:db
	// undo command dev:ship
}

// Open runs a session over a wharf home (here an empty one) under the
// machine's managed policy and the embedding program's own layers, which
// can only tighten it: this program keeps one session plugin dir out.
func ExampleOpen() {
	tmp, _ := os.MkdirTemp("", "wharf-example")
	defer os.RemoveAll(tmp)
	for _, name := range []string{"tools", "experimental"} {
		dir := filepath.Join(tmp, name, "commands")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "run.md"), []byte("---\ndescription: Run "+name+"\n---\nRun.\n"), 0o644)
	}
	rules := filepath.Join(tmp, "embedder.rego")
	os.WriteFile(rules, []byte(`package wharf.admin.embedder

deny contains "experimental plugins are off in this program" if {
	input.plugin == "experimental@inline"
}
`), 0o644)

	pol, err := agent.LoadPolicy(rules)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	r, err := agent.Open(agent.Options{Home: filepath.Join(tmp, "home"), Policy: pol})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	for _, name := range []string{"tools", "experimental"} {
		if err := r.AddPluginDir(ctx, filepath.Join(tmp, name)); err != nil {
			fmt.Println(err)
			return
		}
	}
	set, err := r.Load(ctx, agent.CacheOnly)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range set.Plugins() {
		fmt.Println(p.ID, p.Status, p.Components)
		for _, d := range p.ErrorDetails {
			fmt.Println("  ", d.Layer, d.Type)
		}
	}
	for _, c := range set.Components() {
		fmt.Println(c.Kind, c.Name, c.Description)
	}
	// Output:
	// experimental@inline failed 0
	//    policy policy-denied
	// tools@inline active 1
	// command tools:run Run tools
}
