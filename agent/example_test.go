package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// emptyRegistry has no installed plugins; an agent passes *cache.Cache.
type emptyRegistry struct{}

func (emptyRegistry) List() ([]cache.Record, error) { return nil, nil }

// An agent embeds a Runtime: it opens it under a policy, names its builtins, registers session plugin
// dirs before the first load, activates components through an Activator,
// and reloads on request.
func Example() {
	tmp, _ := os.MkdirTemp("", "wharf-example")
	defer os.RemoveAll(tmp)
	dev := filepath.Join(tmp, "dev")
	os.MkdirAll(filepath.Join(dev, "commands"), 0o755)
	os.WriteFile(filepath.Join(dev, "commands", "ship.md"), []byte("---\ndescription: Ship it\n---\nShip.\n"), 0o644)
	os.WriteFile(filepath.Join(dev, "commands", "help.md"), []byte("My help.\n"), 0o644)
	os.WriteFile(filepath.Join(dev, ".mcp.json"), []byte(`{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db"}}}`), 0o644)

	ctx := context.Background()
	// The session's policy: here no layers beyond the machine's managed
	// ones, which Open reads and applies on top of it.
	pol, err := policy.Open(policy.Sources{})
	if err != nil {
		panic(err)
	}
	r, err := agent.Open(agent.Options{
		Home:     filepath.Join(tmp, "home"),
		Policy:   pol,
		Settings: settings.Paths{Home: filepath.Join(tmp, "home")},
		Registry: emptyRegistry{},
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
