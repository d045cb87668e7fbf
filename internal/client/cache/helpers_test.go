package cache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

var bg = context.Background()

func openStore(t *testing.T, home string) *store.Bolt {
	t.Helper()
	st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newCache(t *testing.T, opts Options) *Cache {
	t.Helper()
	if opts.Home == "" {
		opts.Home = t.TempDir()
	}
	if opts.Store == nil {
		opts.Store = openStore(t, opts.Home)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(c.Root()) })
	return c
}

// files returns a Fill writing the given files ("name" → content; a name
// ending in "*" is executable, a content starting with "->" is a symlink).
func files(m map[string]string) Fill {
	return func(ctx context.Context, dir string) error {
		for name, content := range m {
			mode := os.FileMode(0o644)
			if strings.HasSuffix(name, "*") {
				name, mode = strings.TrimSuffix(name, "*"), 0o755
			}
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if target, ok := strings.CutPrefix(content, "->"); ok {
				if err := os.Symlink(target, p); err != nil {
					return err
				}
				continue
			}
			if err := os.WriteFile(p, []byte(content), mode); err != nil {
				return err
			}
		}
		return nil
	}
}

// dirNames lists a directory (nil when it does not exist).
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

var pid = plugin.MustParseID("deploy@corp")

// helper runs this test binary as a helper process doing role, and returns
// it once it printed "ready".
func helper(t *testing.T, role, home string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "WHARF_CACHE_HELPER="+role, "WHARF_CACHE_HELPER_HOME="+home,
		"WHARF_CACHE_HELPER_ARGS="+strings.Join(args, "\x1f"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper %s: got %q, %v", role, line, err)
	}
	return cmd
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // reap it, so its PID is no longer alive
}

// TestHelperProcess is not a test: it is the body of helper processes.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv("WHARF_CACHE_HELPER")
	if role == "" {
		t.Skip("helper process body")
	}
	home := os.Getenv("WHARF_CACHE_HELPER_HOME")
	args := strings.Split(os.Getenv("WHARF_CACHE_HELPER_ARGS"), "\x1f")
	fatal := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	switch role {
	case "fill-and-hang":
		st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
		if err != nil {
			fatal(err)
		}
		c, err := New(Options{Home: home, Store: st})
		if err != nil {
			fatal(err)
		}
		_, err = c.Materialize(bg, pid, "1.0.0", func(ctx context.Context, dir string) error {
			if err := files(map[string]string{"a.md": "half", "sub/b.md": "written"})(ctx, dir); err != nil {
				return err
			}
			fmt.Println("ready")
			select {}
		})
		fatal(err)
	case "lease-and-hold", "lease-and-exit":
		c, err := New(Options{Home: home})
		if err != nil {
			fatal(err)
		}
		if _, err := c.Acquire(bg, args...); err != nil {
			fatal(err)
		}
		fmt.Println("ready")
		if role == "lease-and-exit" {
			os.Exit(0)
		}
		select {}
	case "lock-and-hold":
		c, err := New(Options{Home: home})
		if err != nil {
			fatal(err)
		}
		c.WithLock(bg, func(ctx context.Context) error {
			fmt.Println("ready")
			time.Sleep(time.Hour)
			return nil
		})
	}
	os.Exit(0)
}
