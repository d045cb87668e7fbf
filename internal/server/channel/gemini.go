package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/wharfhq/wharf/plugin"
)

// GeminiManifestFile is the manifest Gemini CLI reads at an extension's root.
const GeminiManifestFile = "gemini-extension.json"

// GeminiPath is the path, under the server's /git/, of the git repository
// serving the plugin named plugin of channel name as a Gemini CLI
// extension: <name>/gemini/<plugin>.git, beside the channel's own
// marketplace repository <name>.git.
func GeminiPath(name, pluginName string) string {
	return name + "/gemini/" + pluginName + ".git"
}

// GeminiManifest is the gemini-extension.json wharf writes for a plugin:
// its name and version, and its MCP servers in Gemini CLI's form.
type GeminiManifest struct {
	Name        string                     `json:"name"`
	Version     string                     `json:"version"`
	Description string                     `json:"description,omitempty"`
	MCPServers  map[string]GeminiMCPServer `json:"mcpServers,omitempty"`
}

// GeminiMCPServer is one MCP server of a Gemini CLI extension: a command
// (stdio), an httpUrl (streamable HTTP) or a url (SSE).
type GeminiMCPServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	HTTPURL string            `json:"httpUrl,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// claudeMCPServer is one server of a Claude Code plugin's .mcp.json (or
// the plugin manifest's mcpServers object).
type claudeMCPServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// ErrNoPlugin is a Gemini extension asked of a channel for a plugin the
// channel does not serve.
var ErrNoPlugin = errors.New("the channel serves no such plugin")

// GeminiExtension returns, in memory, the git repository of the plugin
// named pluginName of the channel repository src (at its Branch) as a
// Gemini CLI extension: the plugin's tree exactly as the channel pins it,
// with a gemini-extension.json at its root generated from the plugin's
// manifest (name, version, description) and MCP servers (.mcp.json or the
// manifest's mcpServers; ${CLAUDE_PLUGIN_ROOT} becomes ${extensionPath}).
// Skills (skills/<name>/SKILL.md) are read by Gemini CLI in place;
// commands, agents and hooks of the Claude Code format are not. A plugin's
// own gemini-extension.json is replaced. The commit's time is the channel
// commit's, so the same channel commit gives the same extension commit.
func GeminiExtension(src storage.Storer, pluginName string) (storage.Storer, error) {
	if err := plugin.ValidateName(pluginName); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPlugin, err)
	}
	ref, err := src.Reference(Branch)
	if err != nil {
		return nil, fmt.Errorf("channel repository has no %s: %w", Branch, err)
	}
	commit, err := object.GetCommit(src, ref.Hash())
	if err != nil {
		return nil, err
	}
	root, err := commit.Tree()
	if err != nil {
		return nil, err
	}
	sub, err := root.Tree("plugins/" + pluginName)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoPlugin, pluginName)
	}
	var files []file
	var total int64
	w := object.NewTreeWalker(sub, true, nil)
	defer w.Close()
	for {
		name, entry, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if entry.Mode == filemode.Dir || entry.Mode == filemode.Submodule {
			continue
		}
		blob, err := object.GetBlob(src, entry.Hash)
		if err != nil {
			return nil, err
		}
		if total += blob.Size; total > maxTreeBytes {
			return nil, fmt.Errorf("plugin %s is larger than %d bytes", pluginName, maxTreeBytes)
		}
		rd, err := blob.Reader()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return nil, err
		}
		files = append(files, file{path: name, mode: entry.Mode, data: data})
	}
	man, err := geminiManifest(pluginName, files)
	if err != nil {
		return nil, err
	}
	mb, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	dir := newDir()
	for _, f := range files {
		dir.add(f)
	}
	dir.add(file{path: GeminiManifestFile, mode: filemode.Regular, data: append(mb, '\n')})
	mem := memory.NewStorage()
	tw := &treeWriter{s: mem}
	th, err := tw.write(dir)
	if err != nil {
		return nil, err
	}
	sig := commit.Committer
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: th,
		Message: fmt.Sprintf("%s %s as a Gemini CLI extension (channel commit %s)\n", man.Name, man.Version, commit.Hash)}
	o := mem.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return nil, err
	}
	ch, err := mem.SetEncodedObject(o)
	if err != nil {
		return nil, err
	}
	if err := mem.SetReference(plumbing.NewHashReference(Branch, ch)); err != nil {
		return nil, err
	}
	if err := mem.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, Branch)); err != nil {
		return nil, err
	}
	return mem, nil
}

// geminiManifest builds the extension manifest of the plugin whose files
// (as the channel serves them) are files.
func geminiManifest(name string, files []file) (GeminiManifest, error) {
	byPath := map[string][]byte{}
	for _, f := range files {
		if f.mode != filemode.Symlink {
			byPath[f.path] = f.data
		}
	}
	man := GeminiManifest{Name: name, Version: "0.0.0"}
	var pj struct {
		Version     string          `json:"version"`
		Description string          `json:"description"`
		MCPServers  json.RawMessage `json:"mcpServers"`
	}
	if b, ok := byPath[".claude-plugin/plugin.json"]; ok {
		if err := json.Unmarshal(b, &pj); err != nil {
			return man, fmt.Errorf("plugin %s: .claude-plugin/plugin.json: %v", name, err)
		}
	}
	if pj.Version != "" {
		man.Version = pj.Version
	}
	man.Description = pj.Description
	var raw []byte
	switch v := bytes.TrimSpace(pj.MCPServers); {
	case len(v) > 0 && v[0] == '{':
		raw = v
	case len(v) > 0 && v[0] == '"':
		var p string
		if err := json.Unmarshal(v, &p); err == nil {
			raw = byPath[path.Clean(strings.TrimPrefix(p, "./"))]
		}
	default:
		raw = byPath[".mcp.json"]
	}
	if len(raw) == 0 {
		return man, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return man, fmt.Errorf("plugin %s: MCP servers: %v", name, err)
	}
	if inner, ok := doc["mcpServers"]; ok {
		doc = nil
		if err := json.Unmarshal(inner, &doc); err != nil {
			return man, fmt.Errorf("plugin %s: mcpServers: %v", name, err)
		}
	}
	for sn, sv := range doc {
		var s claudeMCPServer
		if err := json.Unmarshal(sv, &s); err != nil {
			return man, fmt.Errorf("plugin %s: MCP server %q: %v", name, sn, err)
		}
		g := GeminiMCPServer{Command: root(s.Command), Cwd: root(s.Cwd), Headers: s.Headers}
		for _, a := range s.Args {
			g.Args = append(g.Args, root(a))
		}
		if len(s.Env) > 0 {
			g.Env = map[string]string{}
			for k, v := range s.Env {
				g.Env[k] = root(v)
			}
		}
		switch {
		case s.URL != "" && s.Type == "sse":
			g.URL = s.URL
		case s.URL != "":
			g.HTTPURL = s.URL
		}
		if man.MCPServers == nil {
			man.MCPServers = map[string]GeminiMCPServer{}
		}
		man.MCPServers[sn] = g
	}
	return man, nil
}

// root rewrites Claude Code's plugin root variable as Gemini CLI's.
func root(s string) string {
	return strings.ReplaceAll(s, "${CLAUDE_PLUGIN_ROOT}", "${extensionPath}")
}
