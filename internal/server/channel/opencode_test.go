package channel

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

const pinsDoc = `{"channel": "ops", "plugins": {"deploy": {"integrity": "w1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}, "own": {"integrity": "w1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA="}}}`

// TestOpenCodeSkills checks a channel's skill index for OpenCode: one
// entry per plugin with its files, wharf's SKILL.md where the plugin has
// none (naming its description, skills, commands and agents), the plugin's
// own SKILL.md kept, and a version naming the channel and the pin; the
// files are served as listed, and a plugin or file not listed is
// ErrNoPlugin.
func TestOpenCodeSkills(t *testing.T) {
	src := channelRepo(t, map[string]string{
		".claude-plugin/wharf.json":                   pinsDoc,
		"plugins/deploy/.claude-plugin/plugin.json":   `{"name": "deploy", "description": "Deploy \"services\"\nsafely"}`,
		"plugins/deploy/commands/ship.md":             "Ship.\n",
		"plugins/deploy/agents/reviewer.md":           "Review.\n",
		"plugins/deploy/skills/rollback/SKILL.md":     "---\nname: rollback\n---\n",
		"plugins/deploy/odd#name.md":                  "x",
		"plugins/own/SKILL.md":                        "---\nname: own\ndescription: mine\n---\n",
		"plugins/own/.claude-plugin/plugin.json":      `{"name": "own"}`,
		"plugins/unpinned/.claude-plugin/plugin.json": `{"name": "unpinned"}`,
	})
	idx, left, err := OpenCodeSkills(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Skills) != 2 || idx.Skills[0].Name != "deploy" || idx.Skills[1].Name != "own" {
		t.Fatalf("index %+v, want deploy and own (the pinned plugins)", idx)
	}
	d := idx.Skills[0]
	if strings.Join(d.Files, ",") != ".claude-plugin/plugin.json,SKILL.md,agents/reviewer.md,commands/ship.md,skills/rollback/SKILL.md" {
		t.Fatalf("deploy files %v", d.Files)
	}
	if d.Version != "wharf ops w1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= generated-skill" {
		t.Fatalf("deploy version %q", d.Version)
	}
	if strings.Join(left["deploy"], ",") != "odd#name.md" || len(left) != 1 {
		t.Fatalf("left out %v, want deploy's odd#name.md alone", left)
	}
	if o := idx.Skills[1]; o.Version != "wharf ops w1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=" || strings.Join(o.Files, ",") != ".claude-plugin/plugin.json,SKILL.md" {
		t.Fatalf("own entry %+v: its SKILL.md is its own", o)
	}
	sk, err := OpenCodeFile(src, "deploy", OpenCodeSkillFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: \"deploy\"\n", `description: "Deploy \"services\"\nsafely"` + "\n", "- skills/rollback/SKILL.md\n", "- commands/ship.md\n", "- agents/reviewer.md\n", "wharf channel ops"} {
		if !strings.Contains(string(sk), want) {
			t.Fatalf("generated SKILL.md lacks %q:\n%s", want, sk)
		}
	}
	if b, err := OpenCodeFile(src, "own", OpenCodeSkillFile); err != nil || !strings.Contains(string(b), "description: mine") {
		t.Fatalf("own SKILL.md: %v %s", err, b)
	}
	if b, err := OpenCodeFile(src, "deploy", "commands/ship.md"); err != nil || string(b) != "Ship.\n" {
		t.Fatalf("ship.md: %v %q", err, b)
	}
	for _, c := range [][2]string{{"deploy", "odd#name.md"}, {"deploy", "nosuch.md"}, {"unpinned", ".claude-plugin/plugin.json"}, {"nosuch", "SKILL.md"}, {"../x", "SKILL.md"}, {"deploy", "../own/SKILL.md"}} {
		if _, err := OpenCodeFile(src, c[0], c[1]); !errors.Is(err, ErrNoPlugin) {
			t.Fatalf("OpenCodeFile(%s, %s) = %v, want ErrNoPlugin", c[0], c[1], err)
		}
	}
	// A channel without a pins file cannot be indexed.
	if _, _, err := OpenCodeSkills(channelRepo(t, map[string]string{"plugins/x/a": "b"})); err == nil || !strings.Contains(err.Error(), "wharf.json") {
		t.Fatalf("no pins: %v", err)
	}
}

// TestOpenCodeServable checks which files OpenCode can fetch as they are.
func TestOpenCodeServable(t *testing.T) {
	for p, want := range map[string]bool{"a/b.md": true, "a b.md": true, "a?b": false, "a%20b": false, `a\b`: false, "a#b": false} {
		if got := openCodeServable(file{path: p, mode: filemode.Regular}); got != want {
			t.Errorf("%q: %v, want %v", p, got, want)
		}
	}
	if openCodeServable(file{path: "link", mode: filemode.Symlink}) {
		t.Error("a symlink is servable")
	}
}

// FuzzOpenCodeSkill fuzzes the SKILL.md wharf generates from a plugin's
// description: its front matter is always the two lines name and
// description, each one JSON string (a YAML double-quoted scalar), whatever
// the description holds.
func FuzzOpenCodeSkill(f *testing.F) {
	for _, s := range []string{"", "Deploy", "a\nb: c\n---\n", `"quoted" \ back`, "\u2028\x00\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, desc string) {
		b := string(openCodeSkill("ops", "deploy", desc, []file{{path: "commands/x.md"}, {path: "skills/s/SKILL.md"}}))
		lines := strings.SplitN(b, "\n", 5)
		if len(lines) < 5 || lines[0] != "---" || lines[1] != `name: "deploy"` || !strings.HasPrefix(lines[2], `description: "`) || lines[3] != "---" {
			t.Fatalf("front matter broken for %q:\n%s", desc, b)
		}
	})
}
