package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// A managed file that exists but cannot be read as a regular file makes
// every decision deny, naming the path, and never blocks (a FIFO opened
// for reading would wait for a writer forever). Before, a dangling link
// counted as no policy at all and a FIFO hung every command.
func TestUnreadableManagedFileFailsClosed(t *testing.T) {
	makers := map[string]func(t *testing.T, path string){
		"dangling symlink": func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone.json"), path); err != nil {
				t.Skip("no symlinks here:", err)
			}
		},
		"fifo": func(t *testing.T, path string) {
			if err := mkfifo(path); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		},
		"directory": func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"permission denied": func(t *testing.T, path string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads any file")
			}
			writeFile(t, path, `{}`)
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, file := range []string{"managed-settings.json", "managed-settings.d/10-team.json", "org.rego"} {
		for kind, make := range makers {
			t.Run(file+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				// A valid policy beside the bad file: it alone would allow.
				writeFile(t, filepath.Join(dir, "managed-settings.d", "00-ok.json"), `{"blockedMarketplaces": []}`)
				path := filepath.Join(dir, file)
				make(t, path)
				e, err := Open(Sources{ManagedDir: dir})
				if err != nil {
					t.Fatalf("Open: %v (the engine must load and deny, not fail)", err)
				}
				d, err := e.Decide(ctx, Request{Action: ActionInstall, Plugin: mustID("a@m")})
				if d.Allowed {
					t.Fatalf("%s %s: decision allowed: %+v", kind, file, d)
				}
				var pe *plugin.Error
				if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want a policy error naming %s", err, path)
				}
				if len(d.Reasons) != 1 || d.Reasons[0].Layer != "managed" || d.Reasons[0].Rule != "unreadable" {
					t.Errorf("reasons %+v", d.Reasons)
				}
				// The settings snapshot commands read fails closed too.
				_, err = settings.Load(settings.Paths{ManagedDir: dir}, nil)
				if !errors.As(err, &pe) || pe.Type != settings.TypeManagedUnreadable || pe.Layer != plugin.LayerPolicy {
					if file != "org.rego" {
						t.Errorf("settings.Load: %v, want %s", err, settings.TypeManagedUnreadable)
					}
				}
			})
		}
	}
}

// The managed directory itself: a dangling link or a file where the
// directory belongs fails closed; a directory that does not exist is no
// policy.
func TestUnreadableManagedDirFailsClosed(t *testing.T) {
	root := t.TempDir()
	dangling := filepath.Join(root, "dangling")
	if err := os.Symlink(filepath.Join(root, "nowhere"), dangling); err != nil {
		t.Skip("no symlinks here:", err)
	}
	file := filepath.Join(root, "file")
	writeFile(t, file, "{}")
	for _, dir := range []string{dangling, file} {
		e, err := Open(Sources{ManagedDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if d, err := e.Decide(ctx, Request{Action: ActionInstall, Plugin: mustID("a@m")}); d.Allowed || err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %+v %v, want a denial naming it", dir, d, err)
		}
	}
	e, err := Open(Sources{ManagedDir: filepath.Join(root, "absent")})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.Decide(ctx, Request{Action: ActionInstall, Plugin: mustID("a@m")}); !d.Allowed || err != nil {
		t.Errorf("absent managed dir: %+v %v", d, err)
	}
}
