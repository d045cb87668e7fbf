package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

// The trusted-folders file is under WHARF_HOME, where anything may have
// damaged it: reading it never panics, a damaged file is a typed error
// naming it, and what reads well holds only absolute paths.
func FuzzTrustStore(f *testing.F) {
	f.Add([]byte(`{"version":1,"folders":[{"path":"/src/a","trustedAt":"2026-01-02T03:04:05Z"}]}`))
	f.Add([]byte(`{"version":1,"folders":[]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"folders":[{"path":"rel"}]}`))
	f.Add([]byte(`{"version":1,"extra":true}`))
	f.Add([]byte(`[`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		home := t.TempDir()
		if err := os.WriteFile(layout.New(home).TrustedFolders(), data, 0o600); err != nil {
			t.Fatal(err)
		}
		folders, err := TrustedFolders(home)
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Type != TypeTrustStore {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		for _, fo := range folders {
			if !filepath.IsAbs(fo.Path) {
				t.Fatalf("relative path %q accepted", fo.Path)
			}
		}
	})
}

// A hook command is hostile text: splitting it into words never panics and
// pins only existing regular files.
func FuzzPinScripts(f *testing.F) {
	for _, s := range []string{`sh ${CLAUDE_PLUGIN_ROOT}/x.sh`, `./s.sh; sh "$CLAUDE_PROJECT_DIR"/s.sh`, `sh \./s.sh`, `"$CLAUDE_PROJECT_DIR"/a.sh --flag`, `echo 'unterminated`, `a;b|c&&d`, `~/bin/x`, `./s.sh`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte("echo"), 0o755); err != nil {
			t.Fatal(err)
		}
		pins := PinScripts(cmd, dir, []string{"CLAUDE_PROJECT_DIR=" + dir})
		for _, p := range pins {
			fi, err := os.Stat(p.Path)
			if err != nil || !fi.Mode().IsRegular() || p.Check() != nil {
				t.Fatalf("pinned %+v from %q", p, cmd)
			}
		}
		// The words naming them can always be replaced by verified copies.
		pc, err := PrepareCommand(cmd, pins)
		if err != nil {
			t.Fatalf("prepare %q: %v", cmd, err)
		}
		if err := pc.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
