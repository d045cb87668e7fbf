package channel

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/wharfhq/wharf/plugin"
)

// Agents that install a plugin without its dependencies (GitHub Copilot
// CLI, OpenAI Codex; docs/agents.md) get a second marketplace in the
// channel's repository, at the path each reads in preference to
// .claude-plugin/marketplace.json (which Claude Code reads, alone):
// .github/plugin/marketplace.json for Copilot CLI,
// .agents/plugins/marketplace.json for Codex; the two are the same file. In it, a plugin with dependencies is a flattened copy,
// flat/<name>/: the plugin's own files, each plugin of its dependency
// closure under deps/<dependency>/, and a plugin.json that lists every
// one's commands, agents and skills folders, and their hooks and MCP
// servers inline, with ${CLAUDE_PLUGIN_ROOT} pointed at the dependency's
// folder. A plugin without dependencies is the same entry as in the
// Claude Code marketplace. The flattened copies' digests are pinned in
// .github/plugin/wharf.json (and .agents/plugins/wharf.json).
const (
	FlatMarketplaceFile      = ".github/plugin/marketplace.json"
	FlatPinsFile             = ".github/plugin/" + plugin.PinsFileName
	CodexFlatMarketplaceFile = ".agents/plugins/marketplace.json"
	CodexFlatPinsFile        = ".agents/plugins/" + plugin.PinsFileName
	flatDir                  = "flat/"
	pluginRootVar            = "${CLAUDE_PLUGIN_ROOT}"
)

// closure is every plugin name reachable from name's dependencies, sorted
// (name itself left out; cycles end).
func closure(name string, deps map[string][]string) []string {
	seen := map[string]bool{name: true}
	var out []string
	stack := append([]string(nil), deps[name]...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		stack = append(stack, deps[n]...)
	}
	sort.Strings(out)
	return out
}

// manifestOf returns a plugin's .claude-plugin/plugin.json as an object
// (empty when it has none).
func manifestOf(origin string, files []file) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	for _, f := range files {
		if f.path == ".claude-plugin/plugin.json" {
			if err := json.Unmarshal(f.data, &m); err != nil {
				return nil, fmt.Errorf("%s: .claude-plugin/plugin.json: %w", origin, err)
			}
		}
	}
	return m, nil
}

func fileOf(files []file, path string) *file {
	path = strings.TrimPrefix(path, "./")
	for i := range files {
		if files[i].path == path {
			return &files[i]
		}
	}
	return nil
}

func hasDir(files []file, dir string) bool {
	for _, f := range files {
		if strings.HasPrefix(f.path, dir+"/") {
			return true
		}
	}
	return false
}

// componentPaths is where one plugin keeps one kind of Markdown component
// (commands, agents, skills): the paths its manifest declares, else the
// default folder when it has one; each under prefix.
func componentPaths(m map[string]json.RawMessage, files []file, key, prefix string) []string {
	var declared []string
	if raw, ok := m[key]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			declared = []string{one}
		} else {
			_ = json.Unmarshal(raw, &declared)
		}
	}
	if len(declared) == 0 && hasDir(files, key) {
		declared = []string{"./" + key + "/"}
	}
	var out []string
	for _, p := range declared {
		p = strings.TrimPrefix(p, "./")
		if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
			continue
		}
		out = append(out, "./"+prefix+p)
	}
	return out
}

// rerooted rewrites ${CLAUDE_PLUGIN_ROOT} in every string of v to the
// dependency's folder in the flattened copy.
func rerooted(v any, prefix string) any {
	switch x := v.(type) {
	case string:
		if prefix == "" {
			return x
		}
		return strings.ReplaceAll(x, pluginRootVar, pluginRootVar+"/"+strings.TrimSuffix(prefix, "/"))
	case []any:
		for i := range x {
			x[i] = rerooted(x[i], prefix)
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = rerooted(x[k], prefix)
		}
		return x
	}
	return v
}

// jsonComponent reads a plugin's hooks or MCP servers: inline in its
// manifest, in the file the manifest names, or in the default file.
func jsonComponent(origin string, m map[string]json.RawMessage, files []file, key, defaultFile string) (map[string]any, error) {
	var raw json.RawMessage
	if v, ok := m[key]; ok {
		var path string
		if json.Unmarshal(v, &path) == nil {
			if f := fileOf(files, path); f != nil {
				raw = f.data
			}
		} else if len(v) > 0 && v[0] == '{' {
			raw = v
		}
	} else if f := fileOf(files, defaultFile); f != nil {
		raw = f.data
	}
	if raw == nil {
		return nil, nil
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", origin, key, err)
	}
	return out, nil
}

// flatManifest is the plugin.json of a flattened copy of e with deps.
func flatManifest(e *Entry, trees map[string][]file, byName map[string]*Entry, deps []string) ([]byte, error) {
	own := trees[e.Name]
	m, err := manifestOf(e.Origin, own)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	delete(out, "dependencies")
	if _, ok := out["name"]; !ok {
		out["name"] = e.Name
	}
	members := append([]string{""}, deps...)
	servers := map[string]any{}
	hooks := map[string][]any{}
	for _, k := range []string{"commands", "agents", "skills"} {
		var paths []string
		for _, d := range members {
			files, mf, prefix := own, m, ""
			if d != "" {
				files, prefix = trees[d], "deps/"+d+"/"
				if mf, err = manifestOf(byName[d].Origin, files); err != nil {
					return nil, err
				}
			}
			paths = append(paths, componentPaths(mf, files, k, prefix)...)
		}
		if len(paths) > 0 {
			out[k] = paths
		} else {
			delete(out, k)
		}
	}
	for _, d := range members {
		files, mf, prefix, origin := own, m, "", e.Origin
		if d != "" {
			files, prefix, origin = trees[d], "deps/"+d+"/", byName[d].Origin
			if mf, err = manifestOf(origin, files); err != nil {
				return nil, err
			}
		}
		mcp, err := jsonComponent(origin, mf, files, "mcpServers", ".mcp.json")
		if err != nil {
			return nil, err
		}
		if inner, ok := mcp["mcpServers"].(map[string]any); ok {
			mcp = inner
		}
		names := make([]string, 0, len(mcp))
		for n := range mcp {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			key := n
			if _, taken := servers[key]; taken {
				key = d + "-" + n
			}
			servers[key] = rerooted(mcp[n], prefix)
		}
		hk, err := jsonComponent(origin, mf, files, "hooks", "hooks/hooks.json")
		if err != nil {
			return nil, err
		}
		if inner, ok := hk["hooks"].(map[string]any); ok {
			for ev, list := range inner {
				if l, ok := rerooted(list, prefix).([]any); ok {
					hooks[ev] = append(hooks[ev], l...)
				}
			}
		}
	}
	delete(out, "mcpServers")
	delete(out, "hooks")
	if len(servers) > 0 {
		out["mcpServers"] = servers
	}
	if len(hooks) > 0 {
		out["hooks"] = map[string]any{"hooks": hooks}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// flatFiles is what the channel's repository carries for agents without
// dependency resolution: the second marketplace, its pins, and the
// flattened copies. trees holds each entry's files as the channel serves
// them under plugins/<name>/.
func flatFiles(d Definition, entries []Entry, trees map[string][]file) ([]file, error) {
	deps := map[string][]string{}
	byName := map[string]*Entry{}
	for i := range entries {
		deps[entries[i].Name] = entries[i].Dependencies
		byName[entries[i].Name] = &entries[i]
	}
	flat := make([]Entry, len(entries))
	var out []file
	for i := range entries {
		e := entries[i]
		cl := closure(e.Name, deps)
		var members []string
		for _, n := range cl {
			if _, ok := trees[n]; ok {
				members = append(members, n)
			}
		}
		e.Dependencies = nil
		if len(members) == 0 {
			flat[i] = e
			continue
		}
		mf, err := flatManifest(&entries[i], trees, byName, members)
		if err != nil {
			return nil, fmt.Errorf("channel %s: flatten %s: %w", d.Name, e.Origin, err)
		}
		var files []file
		for _, f := range trees[e.Name] {
			if f.path != ".claude-plugin/plugin.json" {
				files = append(files, f)
			}
		}
		files = append(files, file{path: ".claude-plugin/plugin.json", mode: filemode.Regular, data: mf})
		for _, n := range members {
			for _, f := range trees[n] {
				f.path = "deps/" + n + "/" + f.path
				files = append(files, f)
			}
		}
		sort.Slice(files, func(a, b int) bool { return files[a].path < files[b].path })
		e.Digest, e.OriginDigest = digestFiles(files), ""
		e.Source = fmt.Sprintf("%s with %s", e.Source, strings.Join(members, ", "))
		flat[i] = e
		for _, f := range files {
			f.path = flatDir + e.Name + "/" + f.path
			out = append(out, f)
		}
	}
	mj, err := MarketplaceJSON(d, flat)
	if err != nil {
		return nil, err
	}
	// Entries flattened are served from flat/.
	var doc map[string]any
	if err := json.Unmarshal(mj, &doc); err != nil {
		return nil, err
	}
	if ps, ok := doc["plugins"].([]any); ok {
		for i, p := range ps {
			if pm, ok := p.(map[string]any); ok && flat[i].Digest != entries[i].Digest {
				pm["source"] = "./" + flatDir + flat[i].Name
			}
		}
	}
	mj, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	pj, err := PinsJSON(d, flat)
	if err != nil {
		return nil, err
	}
	mj = append(mj, '\n')
	out = append(out, file{path: FlatMarketplaceFile, mode: filemode.Regular, data: mj},
		file{path: FlatPinsFile, mode: filemode.Regular, data: pj},
		file{path: CodexFlatMarketplaceFile, mode: filemode.Regular, data: mj},
		file{path: CodexFlatPinsFile, mode: filemode.Regular, data: pj})
	return out, nil
}
