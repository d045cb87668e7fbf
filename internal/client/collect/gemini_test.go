package collect

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// TestGeminiRead reads a Gemini CLI home: an extension from a wharf
// channel is reported under the channel with the digest of the plugin
// alone, one from elsewhere as sideloaded, a disabled one as disabled, and
// a broken copy as failed; a missing home is an agent-state error.
func TestGeminiRead(t *testing.T) {
	home := t.TempDir()
	writeTree(t, filepath.Join(home, "plugin"), map[string]string{".claude-plugin/plugin.json": `{"name": "deploy", "version": "1.2.0"}`, "skills/s/SKILL.md": "s\n"})
	want, err := trust.Digest(filepath.Join(home, "plugin"))
	if err != nil {
		t.Fatal(err)
	}
	ext := filepath.Join(home, ".gemini/extensions")
	writeTree(t, filepath.Join(ext, "deploy"), map[string]string{
		".claude-plugin/plugin.json": `{"name": "deploy", "version": "1.2.0"}`,
		"skills/s/SKILL.md":          "s\n",
		GeminiManifestFile:           `{"name": "deploy", "version": "1.2.0"}`,
		GeminiInstallFile:            `{"source": "http://127.0.0.1:8080/git/approved/gemini/deploy.git", "type": "git"}`,
	})
	writeTree(t, filepath.Join(ext, "local"), map[string]string{
		GeminiManifestFile: `{"name": "local", "version": "0.1.0"}`,
		GeminiInstallFile:  `{"source": "/opt/local", "type": "local"}`,
	})
	writeTree(t, filepath.Join(ext, "broken"), map[string]string{GeminiManifestFile: `{"name": 3}`})
	writeTree(t, ext, map[string]string{"extension-enablement.json": `{"local": {"overrides": ["!/home/dev/*"]}, "deploy": {"overrides": ["/home/dev/*"]}}`})
	got, warns, err := Gemini{Dir: filepath.Join(home, ".gemini")}.Read()
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	ids := byID(got)
	if p := ids["deploy@approved"]; p.Digest != want.Digest || p.Version != "1.2.0" || p.Install != inventory.InstallUser || p.State != inventory.StateActive {
		t.Fatalf("deploy: %+v, want digest %s", p, want.Digest)
	}
	if p := ids["local@gemini"]; p.Install != inventory.InstallSideloaded || p.Enabled || p.State != inventory.StateDisabled || p.Digest == "" {
		t.Fatalf("local: %+v", p)
	}
	if p := ids["broken@gemini"]; p.State != inventory.StateFailed || p.Reason == "" {
		t.Fatalf("broken: %+v", p)
	}
	_, _, err = Gemini{Dir: filepath.Join(home, "nosuch")}.Read()
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != TypeAgentState {
		t.Fatalf("missing home: %v", err)
	}
	// An unreadable enablement file names itself.
	writeTree(t, ext, map[string]string{"extension-enablement.json": `[`})
	if _, _, err := (Gemini{Dir: filepath.Join(home, ".gemini")}).Read(); !errors.As(err, &pe) || pe.Type != TypeAgentState {
		t.Fatalf("bad enablement file: %v", err)
	}
}

// FuzzParseGeminiExtension feeds hostile manifests and install metadata to
// the parser: it never panics, and a channel it derives is a valid name.
func FuzzParseGeminiExtension(f *testing.F) {
	f.Add(`{"name": "deploy", "version": "1.0.0"}`, `{"source": "http://h/git/approved/gemini/deploy.git", "type": "git"}`)
	f.Add(`{"name": "x"}`, `{"source": "/git/../gemini/x.git", "type": "git"}`)
	f.Add(`{}`, `null`)
	f.Add(`[]`, `{"type": 1}`)
	f.Fuzz(func(t *testing.T, manifest, meta string) {
		in, err := ParseGeminiExtension("/x", []byte(manifest), []byte(meta))
		if err != nil {
			return
		}
		if plugin.ValidateName(in.Name) != nil {
			t.Fatalf("accepted name %q", in.Name)
		}
		if in.Channel != "" && plugin.ValidateName(in.Channel) != nil {
			t.Fatalf("accepted channel %q", in.Channel)
		}
	})
}
