package plugin

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureMarketplace writes a small marketplace with one clean plugin, one
// with warnings only, and optionally a broken one.
func fixtureMarketplace(t *testing.T, broken bool) string {
	root := t.TempDir()
	plugins := `{"name":"clean","source":"./plugins/clean","description":"d","version":"1.0.0","author":{"name":"A"}},
	{"name":"sloppy","source":"./plugins/sloppy"},
	{"name":"remote","source":{"source":"github","repo":"corp/remote"},"description":"d","version":"1.0.0","author":{"name":"A"}}`
	if broken {
		plugins += `,{"name":"broken","source":"./plugins/broken"}`
	}
	writeTree(t, root, map[string]string{
		".claude-plugin/marketplace.json":           `{"name":"corp","owner":{"name":"IT"},"metadata":{"description":"d","version":"1"},"plugins":[` + plugins + `]}`,
		"plugins/clean/commands/a.md":               "---\ndescription: a\n---\nA",
		"plugins/sloppy/.claude-plugin/plugin.json": `{"name":"sloppy","colour":"red"}`,
		"plugins/sloppy/skills/s/SKILL.md":          "---\nname: s\n---\nno description",
		"plugins/broken/.claude-plugin/plugin.json": `{"name":"broken","commands":"./missing"}`,
	})
	return root
}

func TestValidateMarketplaceRoot(t *testing.T) {
	root := fixtureMarketplace(t, false)
	diags, err := Validate(root, false)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var got []string
	for _, d := range diags {
		if d.Severity != SeverityWarning {
			t.Errorf("unexpected %s", d)
		}
		got = append(got, filepath.Base(d.File)+" "+d.Field)
	}
	want := "plugin.json colour|plugin.json description|plugin.json version|plugin.json author|SKILL.md description"
	if strings.Join(got, "|") != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "|"), want)
	}
}

func TestValidateStrictTurnsWarningsIntoErrors(t *testing.T) {
	root := fixtureMarketplace(t, false)
	diags, err := Validate(root, true)
	var pe *Error
	if !errors.As(err, &pe) || pe.Type != TypeManifestInvalid {
		t.Fatalf("strict Validate: %v", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "colour" || !strings.Contains(fe.Msg, "(strict)") {
		t.Errorf("first problem = %v", err)
	}
	if len(diags) != 5 || countErrors(diags) != 5 {
		t.Errorf("diags = %v", diags)
	}
}

func TestValidateFindsBrokenPlugin(t *testing.T) {
	root := fixtureMarketplace(t, true)
	diags, err := Validate(root, false)
	if err == nil {
		t.Fatal("no error for a plugin declaring a missing path")
	}
	found := false
	for _, d := range diags {
		if d.Severity == SeverityError && d.Field == "commands[0]" && strings.Contains(d.Message, "does not exist") {
			found = true
		}
	}
	if !found {
		t.Errorf("diags = %v", diags)
	}
}

func TestValidatePathForms(t *testing.T) {
	root := fixtureMarketplace(t, false)
	tests := []struct {
		name, path string
		errs       int
		warns      int
	}{
		{"marketplace.json file", filepath.Join(root, ".claude-plugin", "marketplace.json"), 0, 5},
		// A plugin directory also gets the plugin directory's checks
		// (README, LICENSE, icon): three more warnings.
		{"plugin dir", filepath.Join(root, "plugins", "sloppy"), 0, 8},
		{"plugin.json file", filepath.Join(root, "plugins", "sloppy", ".claude-plugin", "plugin.json"), 0, 8},
		// Alone, a folder of commands without .claude-plugin/plugin.json is
		// refused, as Claude Code refuses it (its marketplace entry made
		// it a plugin above).
		{"clean plugin dir", filepath.Join(root, "plugins", "clean"), 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diags, err := Validate(tc.path, false)
			if (err != nil) != (tc.errs > 0) || countErrors(diags) != tc.errs || len(diags)-countErrors(diags) != tc.warns {
				t.Errorf("err %v, diags %v", err, diags)
			}
		})
	}
	// A lone plugin.json outside .claude-plugin is checked as a manifest.
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"plugin.json": `{"name":"x","version":"1","description":"d","author":{"name":"a"},"skills":"../up"}`})
	diags, err := Validate(filepath.Join(dir, "plugin.json"), false)
	if err == nil || len(diags) != 1 || diags[0].Field != "skills" {
		t.Errorf("lone plugin.json: %v %v", err, diags)
	}
}

func TestValidateBadInputs(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"syntax/.claude-plugin/marketplace.json": "{\n  \"name\": \"x\",\n  oops\n}",
		"types/.claude-plugin/marketplace.json":  `{"name":"x","owner":{"name":"o"},"plugins":[{"name":"a","source":"./a","strict":1},{"name":"b","source":"./b"}]}`,
		"types/b/.claude-plugin/plugin.json":     `{"name":"b","commands":"./nope"}`,
		"escape/.claude-plugin/marketplace.json": `{"name":"x","owner":{"name":"o"},"plugins":[{"name":"a","source":"./a"}]}`,
		"escape/a":                               "->" + t.TempDir(),
	})
	tests := []struct {
		name, path string
		want       []string // substrings of error diagnostics, in order
	}{
		{"syntax", filepath.Join(dir, "syntax"), []string{"marketplace.json:3:3: invalid JSON"}},
		{"types and plugins after", filepath.Join(dir, "types"), []string{"plugins[0].strict: expected boolean, got number", `plugins[0].source: plugin "a": source ./a is not in the marketplace`, "commands[0]: ./nope: declared path does not exist"}},
		{"entry dir escapes", filepath.Join(dir, "escape"), []string{"outside the marketplace"}},
		{"missing path", filepath.Join(dir, "nope"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diags, err := Validate(tc.path, false)
			if err == nil {
				t.Fatal("no error")
			}
			var errs []string
			for _, d := range diags {
				if d.Severity == SeverityError {
					errs = append(errs, d.String())
				}
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %q, want %d", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("error %d = %q, want %q", i, errs[i], w)
				}
			}
		})
	}
}

// withoutDirectoryChecks drops the plugin directory's findings.
func withoutDirectoryChecks(diags []Diagnostic) []Diagnostic {
	var out []Diagnostic
	for _, d := range diags {
		if !d.IsDirectoryCheck() {
			out = append(out, d)
		}
	}
	return out
}
