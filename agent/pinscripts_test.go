package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// pinScriptsMap is PinScripts as it was written before it looked env up
// in place: the variables in a map, the pinned paths in another.
func pinScriptsMap(command, dir string, env []string) []ScriptPin {
	vars := map[string]string{"HOME": os.Getenv("HOME")}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var out []ScriptPin
	seen := map[string]int{} // path -> index in out
	for _, t := range wordTokens(command) {
		w := os.Expand(t.s, func(k string) string { return vars[k] })
		if strings.HasPrefix(w, "~/") {
			w = vars["HOME"] + w[1:]
		}
		if w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			if dir == "" || !strings.Contains(p, "/") && !strings.Contains(p, ".") {
				continue
			}
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if i, ok := seen[p]; ok {
			out[i].Spans = append(out[i].Spans, [2]int{t.start, t.end})
			continue
		}
		if isSystem(p) {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxPinnedScript {
			continue
		}
		d, err := digestFile(p)
		if err != nil {
			continue
		}
		seen[p] = len(out)
		out = append(out, ScriptPin{Path: p, Digest: d, Spans: [][2]int{{t.start, t.end}}})
	}
	return out
}

// PinScripts pins what the map-based version pinned, for commands made of
// existing and missing scripts, variables set once, twice, empty or not at
// all, ~ and relative words.
func TestPinScriptsEqualsMapLookup(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, f := range []string{filepath.Join(dir, "run.sh"), filepath.Join(dir, "bin", "guard"), filepath.Join(home, "hook.sh")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		word := rapid.SampledFrom([]string{"sh", "./run.sh", "run.sh", "bin/guard", "$R/bin/guard", "${R}/run.sh", "$RR/run.sh",
			"~/hook.sh", "$HOME/hook.sh", "${HOME}/hook.sh", "-x", ";", "&&", "\"$R/run.sh\"", "'./run.sh'", "$=", "${}", "missing.sh", dir + "/run.sh"})
		command := strings.Join(rapid.SliceOfN(word, 0, 8).Draw(t, "words"), " ")
		entry := rapid.SampledFrom([]string{"R=" + dir, "R=", "R=/nowhere", "RR=" + dir, "HOME=" + dir, "HOME=", "=x", "R", "HOMEX=/y"})
		env := rapid.SliceOfN(entry, 0, 4).Draw(t, "env")
		wd := rapid.SampledFrom([]string{"", dir}).Draw(t, "dir")
		got, want := PinScripts(command, wd, env), pinScriptsMap(command, wd, env)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("PinScripts(%q, %q, %q)\n= %+v\nwant %+v", command, wd, env, got, want)
		}
	})
}

// A component's variable lookup answers as its Env list does.
func TestEnvLookupEqualsEnv(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	rapid.Check(t, func(t *rapid.T) {
		c := Component{
			Root:    rapid.SampledFrom([]string{"", "/c/ops"}).Draw(t, "root"),
			DataDir: rapid.SampledFrom([]string{"", "/h/data/ops"}).Draw(t, "data"),
			options: rapid.SliceOfN(rapid.SampledFrom([]string{"CLAUDE_PLUGIN_OPTION_A=1", "CLAUDE_PLUGIN_OPTION_A=2", "CLAUDE_PLUGIN_OPTION_B=", "CLAUDE_PLUGIN_OPTION_=x"}), 0, 3).Draw(t, "options"),
		}
		project := rapid.SampledFrom([]string{"", "/w/p"}).Draw(t, "project")
		lookup := c.envLookup(project)
		env := c.Env(project)
		for _, k := range []string{VarPluginRoot, VarWharfRoot, VarPluginData, VarProjectDir, "HOME", "CLAUDE_PLUGIN_OPTION_A",
			"CLAUDE_PLUGIN_OPTION_B", "CLAUDE_PLUGIN_OPTION_", "CLAUDE_PLUGIN", "", "PATH"} {
			if got, want := lookup(k), envValue(env, k); got != want {
				t.Fatalf("lookup(%q) = %q, env %q gives %q", k, got, env, want)
			}
		}
	})
}
