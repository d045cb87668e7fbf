package channel

import (
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
)

// channelRepo is a channel repository in memory whose Branch holds files.
func channelRepo(t testing.TB, files map[string]string) storage.Storer {
	t.Helper()
	mem := memory.NewStorage()
	dir := newDir()
	for p, data := range files {
		dir.add(file{path: p, mode: filemode.Regular, data: []byte(data)})
	}
	tw := &treeWriter{s: mem}
	th, err := tw.write(dir)
	if err != nil {
		t.Fatal(err)
	}
	sig := Author
	sig.When = Epoch
	o := mem.NewEncodedObject()
	if err := (&object.Commit{Author: sig, Committer: sig, TreeHash: th, Message: "x\n"}).Encode(o); err != nil {
		t.Fatal(err)
	}
	ch, err := mem.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.SetReference(plumbing.NewHashReference(Branch, ch)); err != nil {
		t.Fatal(err)
	}
	return mem
}

// extensionFile reads path from the extension repository's Branch.
func extensionFile(t *testing.T, s storage.Storer, path string) string {
	t.Helper()
	ref, err := s.Reference(Branch)
	if err != nil {
		t.Fatal(err)
	}
	c, err := object.GetCommit(s, ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	f, err := tree.File(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r, _ := f.Reader()
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// TestGeminiExtension serves a channel's plugin as a Gemini CLI
// extension: the plugin's files unchanged, a generated manifest with its
// MCP servers in Gemini CLI's form (the plugin root variable renamed), a
// plugin's own gemini-extension.json replaced, and a plugin the channel
// does not serve refused.
func TestGeminiExtension(t *testing.T) {
	src := channelRepo(t, map[string]string{
		".claude-plugin/marketplace.json":           `{"name": "approved"}`,
		"plugins/deploy/.claude-plugin/plugin.json": `{"name": "deploy", "version": "1.2.0", "description": "Deploys."}`,
		"plugins/deploy/.mcp.json": `{"mcpServers": {
			"local": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["--root", "${CLAUDE_PLUGIN_ROOT}"], "env": {"X": "1"}},
			"remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
			"events": {"type": "sse", "url": "https://mcp.example.com/sse"}}}`,
		"plugins/deploy/skills/ship/SKILL.md":      "---\nname: ship\n---\nShip.\n",
		"plugins/deploy/gemini-extension.json":     `{"name": "evil"}`,
		"plugins/other/.claude-plugin/plugin.json": `{"name": "other"}`,
	})
	ext, err := GeminiExtension(src, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	var m GeminiManifest
	if err := json.Unmarshal([]byte(extensionFile(t, ext, GeminiManifestFile)), &m); err != nil {
		t.Fatal(err)
	}
	want := GeminiManifest{Name: "deploy", Version: "1.2.0", Description: "Deploys.", MCPServers: map[string]GeminiMCPServer{
		"local":  {Command: "${extensionPath}/bin/srv", Args: []string{"--root", "${extensionPath}"}, Env: map[string]string{"X": "1"}},
		"remote": {HTTPURL: "https://mcp.example.com/mcp"},
		"events": {URL: "https://mcp.example.com/sse"},
	}}
	gb, _ := json.Marshal(m)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("manifest\n got %s\nwant %s", gb, wb)
	}
	if got := extensionFile(t, ext, "skills/ship/SKILL.md"); got != "---\nname: ship\n---\nShip.\n" {
		t.Fatalf("skill: %q", got)
	}
	head, err := ext.Reference(plumbing.HEAD)
	if err != nil || head.Target() != Branch {
		t.Fatalf("HEAD %v %v", head, err)
	}
	// The same channel commit gives the same extension commit.
	again, err := GeminiExtension(src, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := ext.Reference(Branch)
	r2, _ := again.Reference(Branch)
	if r1.Hash() != r2.Hash() {
		t.Fatalf("two builds of one channel commit: %s, %s", r1.Hash(), r2.Hash())
	}
	for _, name := range []string{"nosuch", "../deploy", ""} {
		if _, err := GeminiExtension(src, name); !errors.Is(err, ErrNoPlugin) {
			t.Fatalf("%q: %v", name, err)
		}
	}
	// A plugin whose MCP servers cannot be read names the file.
	bad := channelRepo(t, map[string]string{"plugins/x/.mcp.json": `{"mcpServers": {"a": 3}}`})
	if _, err := GeminiExtension(bad, "x"); err == nil || errors.Is(err, ErrNoPlugin) {
		t.Fatalf("bad .mcp.json: %v", err)
	}
}

// FuzzGeminiManifest feeds hostile plugin manifests and MCP server files to
// the extension manifest generator: it never panics, and what it accepts
// marshals.
func FuzzGeminiManifest(f *testing.F) {
	f.Add(`{"version": "1.0.0", "mcpServers": {"a": {"command": "x"}}}`, `{}`)
	f.Add(`{"mcpServers": "./servers.json"}`, `{"mcpServers": {"b": {"url": "https://x", "type": "sse"}}}`)
	f.Add(`{}`, `{"a": {"command": "${CLAUDE_PLUGIN_ROOT}/x", "args": ["1"]}}`)
	f.Add(`[]`, `null`)
	f.Fuzz(func(t *testing.T, pj, mcp string) {
		files := []file{
			{path: ".claude-plugin/plugin.json", mode: filemode.Regular, data: []byte(pj)},
			{path: ".mcp.json", mode: filemode.Regular, data: []byte(mcp)},
			{path: "servers.json", mode: filemode.Regular, data: []byte(mcp)},
		}
		m, err := geminiManifest("p", files)
		if err != nil {
			return
		}
		if _, err := json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if m.Name != "p" {
			t.Fatalf("name %q", m.Name)
		}
	})
}
