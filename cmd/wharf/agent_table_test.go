package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// The table of `wharf agent components`, read from the set in place with
// one plugin string per plugin, is the table of the set's rows
// (componentRow over Components), byte for byte, over plugins of every
// component kind and a user's own component.
func TestComponentTableEqualsRows(t *testing.T) {
	w := newVerbWorld(t)
	testworld.Marketplace(t, w.mkt, "corp", map[string]map[string]string{
		"app": {".claude-plugin/plugin.json": testworld.Manifest("app", "1.0.0", "lib"), "commands/app.md": "# app\n",
			"commands/deploy.md": "---\ndescription: Deploy\n---\nGo.\n", "agents/review.md": "---\nname: review\ndescription: Review\n---\nR.\n",
			"skills/s1/SKILL.md": "---\nname: s1\ndescription: S\n---\nS.\n",
			"hooks/hooks.json":   `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/guard"}]}]}}`,
			".mcp.json":          `{"mcpServers": {"api": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/api"}}}`},
		"lib": {".claude-plugin/plugin.json": testworld.Manifest("lib", "1.0.0"), "commands/lib.md": "# lib\n", "commands/app.md": "# lib's app\n"},
	})
	ctx := context.Background()
	w.must(func(io streams, h *home.Home) error {
		if err := runMarketplaceUpdate(ctx, &MarketplaceUpdateOptions{IO: io, Home: h}); err != nil {
			return err
		}
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	// A user's own command (WHARF_HOME/commands): no plugin.
	if err := os.MkdirAll(filepath.Join(w.dir, "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "commands", "mine.md"), []byte("---\ndescription: Mine\n---\nM.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var fast, plain bytes.Buffer
	rows := 0
	w.must(func(io streams, h *home.Home) error {
		o := AgentOptions{IO: io, Home: h, agentOptions: agentOptions{project: w.dir}}
		set, err := o.loadSet(ctx)
		if err != nil {
			return err
		}
		if err := writeComponentTable(&fast, set); err != nil {
			return err
		}
		tw := newTable(&plain)
		tw.row("KIND", "NAME", "SOURCE", "PLUGIN")
		for _, c := range set.Components() {
			r := componentRow(c)
			tw.row(string(r.Kind), r.Name, r.Source, r.Plugin)
			rows++
		}
		return tw.Flush()
	})
	for _, want := range []string{"mine", "user", "hook", "mcp-server", "skill", "agent", "app@corp", "lib@corp"} {
		if !bytes.Contains(plain.Bytes(), []byte(want)) {
			t.Fatalf("the set has no %q; the test wants every kind and source\n%s", want, plain.String())
		}
	}
	if rows < 8 {
		t.Fatalf("the set has %d components; the test wants every kind\n%s", rows, plain.String())
	}
	if fast.String() != plain.String() {
		t.Fatalf("table\n%s\nwant\n%s", fast.String(), plain.String())
	}
}
