package collect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// TestOpenCodeRead reads an OpenCode installation: a skill entry a wharf
// channel served (with wharf's SKILL.md) is reported under the channel with
// the digest of the plugin alone, one with its own SKILL.md with that file
// counted, an entry from another skills URL and a skill of the
// configuration directory as sideloaded; a directory OpenCode does not load
// is skipped with a warning; an installation with neither directory is an
// agent-state error; nothing is written.
func TestOpenCodeRead(t *testing.T) {
	home := t.TempDir()
	plug := map[string]string{".claude-plugin/plugin.json": `{"name": "deploy", "version": "1.2.0"}`, "skills/s/SKILL.md": "s\n"}
	writeTree(t, filepath.Join(home, "plugin"), plug)
	want, err := trust.Digest(filepath.Join(home, "plugin"))
	if err != nil {
		t.Fatal(err)
	}
	oc := DefaultOpenCodeDirs(nil, home)
	cache := filepath.Join(oc.CacheDir, "skills")
	plug[OpenCodeSkillFile] = "---\nname: deploy\n---\n"
	plug[OpenCodeVersionFile] = "wharf ops " + want.Digest + " generated-skill"
	writeTree(t, filepath.Join(cache, "deploy"), plug)
	writeTree(t, filepath.Join(cache, "own"), map[string]string{OpenCodeSkillFile: "own\n", OpenCodeVersionFile: "wharf ops w1:x"})
	writeTree(t, filepath.Join(cache, "other"), map[string]string{OpenCodeSkillFile: "other\n", OpenCodeVersionFile: "3"})
	writeTree(t, filepath.Join(cache, "empty"), map[string]string{"README": "no skill\n"})
	writeTree(t, filepath.Join(oc.ConfigDir, "skills", "mine"), map[string]string{OpenCodeSkillFile: "mine\n"})
	writeTree(t, filepath.Join(oc.ConfigDir, "skill", "Bad Name"), map[string]string{OpenCodeSkillFile: "x\n"})
	got, warns, err := oc.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "empty: no SKILL.md") || !strings.Contains(warns[1], "Bad Name: not a skill name") {
		t.Fatalf("warnings %q", warns)
	}
	ids := byID(got)
	if len(got) != 4 {
		t.Fatalf("reported %+v", got)
	}
	if p := ids["deploy@ops"]; p.Digest != want.Digest || p.Version != "1.2.0" || p.Install != inventory.InstallUser || p.State != inventory.StateActive || !p.Enabled {
		t.Fatalf("deploy: %+v, want digest %s", p, want.Digest)
	}
	ownWant, _ := trust.DigestOmitting(filepath.Join(cache, "own"), OpenCodeVersionFile)
	if p := ids["own@ops"]; p.Digest != ownWant.Digest || p.Install != inventory.InstallUser {
		t.Fatalf("own: %+v, want its SKILL.md counted (%s)", p, ownWant.Digest)
	}
	if p := ids["other@opencode"]; p.Install != inventory.InstallSideloaded || p.Digest == "" {
		t.Fatalf("other: %+v", p)
	}
	if p := ids["mine@opencode"]; p.Install != inventory.InstallSideloaded || p.Digest == "" {
		t.Fatalf("mine: %+v", p)
	}
	// The same name in the configuration directory's skill/ and skills/
	// is reported once, with a warning.
	writeTree(t, filepath.Join(oc.ConfigDir, "skill", "mine"), map[string]string{OpenCodeSkillFile: "mine too\n"})
	if got, warns, err := oc.Read(); err != nil || len(got) != 4 || !strings.Contains(strings.Join(warns, "\n"), "a second skill reported as mine@opencode") {
		t.Fatalf("duplicate: %v %+v %q", err, got, warns)
	}
	_, _, err = OpenCode{ConfigDir: filepath.Join(home, "nosuch"), CacheDir: filepath.Join(home, "nosuch2")}.Read()
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != TypeAgentState {
		t.Fatalf("missing installation: %v", err)
	}
	// An unreadable skills directory names itself.
	if os.Geteuid() != 0 {
		if err := os.Chmod(cache, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(cache, 0o755)
		if _, _, err := oc.Read(); !errors.As(err, &pe) || pe.Type != TypeAgentState || !strings.Contains(pe.Object, "skills") {
			t.Fatalf("unreadable cache: %v", err)
		}
	}
}

// TestDefaultOpenCodeDirs follows OpenCode's XDG variables, absolute only.
func TestDefaultOpenCodeDirs(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": "/cfg", "XDG_CACHE_HOME": "relative"}
	oc := DefaultOpenCodeDirs(func(k string) string { return env[k] }, "/home/dev")
	if oc.ConfigDir != "/cfg/opencode" || oc.CacheDir != "/home/dev/.cache/opencode" {
		t.Fatalf("%+v", oc)
	}
}

// FuzzParseOpenCodeVersion feeds hostile version files to the parser: it
// never panics, and what it accepts names a valid channel and a w1: digest,
// and prints back as it was read.
func FuzzParseOpenCodeVersion(f *testing.F) {
	for _, s := range []string{"wharf ops w1:abc", "wharf ops w1:abc generated-skill", "wharf ../x w1:a", "1.0.0", "", "wharf ops w1: extra", "wharf  ops\tw1:a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseOpenCodeVersion(s)
		if !ok {
			return
		}
		if plugin.ValidateName(v.Channel) != nil || !strings.HasPrefix(v.Digest, "w1:") || strings.ContainsAny(v.Digest, " \t\n") {
			t.Fatalf("accepted %q as %+v", s, v)
		}
	})
}
