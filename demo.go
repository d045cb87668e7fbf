// Package wharf holds what the wharf binary carries with it: the demo
// marketplace that wharf-server registers on first start, so that a new
// installation shows a working catalog wherever it runs.
package wharf

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

//go:embed all:testdata/demo-marketplace
var demo embed.FS

const demoRoot = "testdata/demo-marketplace"

// DemoMarketplace is the demo marketplace's tree (.claude-plugin/marketplace.json
// and its plugins).
func DemoMarketplace() fs.FS {
	sub, err := fs.Sub(demo, demoRoot)
	if err != nil {
		panic(err) // the pattern above guarantees the directory exists
	}
	return sub
}

// WriteDemoMarketplace writes the demo marketplace into dir, which must not
// exist yet. It writes a temporary sibling first, makes it durable and
// renames it into place (atomicfile.CommitDir), so dir is either complete or
// absent, even after a crash.
func WriteDemoMarketplace(dir string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src := DemoMarketplace()
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Base(filepath.Dir(dst)) == "bin" || filepath.Ext(dst) == ".sh" {
			mode = 0o755
		}
		return os.WriteFile(dst, b, mode)
	})
	if err != nil {
		return fmt.Errorf("write demo marketplace: %w", err)
	}
	return atomicfile.CommitDir(tmp, dir)
}
