package source

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

// The top-level .git directory is outside the w1: digest: an archive or npm
// package that carries one loses it, so a hook can never run unpinned,
// unsigned content from it. A .git deeper in the tree is covered by the
// digest and kept, as is a top-level file named .git.
func TestFetchDropsTopLevelGitDir(t *testing.T) {
	zipped := makeZip(t,
		zipEntry{name: ".claude-plugin/plugin.json", body: `{"name":"z"}`},
		zipEntry{name: ".git/", mode: fs.ModeDir | 0o755},
		zipEntry{name: ".git/run.sh", body: "echo unsigned\n", mode: 0o755},
		zipEntry{name: "./.git/hooks/post-checkout", body: "echo unsigned\n"},
		zipEntry{name: "sub/.git/kept", body: "covered by the digest"},
	)
	tgz := makeTgz(t,
		tarEntry{name: "package/package.json", body: `{"name":"tools","version":"1.0.0"}`},
		tarEntry{name: "package/.git", typ: '5'},
		tarEntry{name: "package/.git/run.sh", body: "echo unsigned\n", mode: 0o755},
		tarEntry{name: "package/sub/.git/kept", body: "covered by the digest"},
	)
	srv := serve(t, map[string][]byte{"/p.zip": zipped})
	reg := npmRegistry(t, map[string]map[string]any{
		"/tools": {"dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{"version": "1.0.0", "dist": map[string]any{"tarball": "REGISTRY/t/tools.tgz", "integrity": sri512(tgz)}}}},
	}, map[string][]byte{"/t/tools.tgz": tgz})
	f := &Fetcher{Net: netfetch.Config{NPMRegistry: reg.URL}}
	for _, src := range []plugin.Source{
		{Kind: plugin.SourceArchive, URL: srv.URL + "/p.zip", SHA256: hexSHA256(zipped)},
		{Kind: plugin.SourceNPM, Package: "tools"},
	} {
		t.Run(string(src.Kind), func(t *testing.T) {
			_, dest := sandbox(t)
			if _, err := fetchTo(t, f, src, dest); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(dest, ".git")); err == nil {
				t.Errorf("the fetched tree keeps .git, which the digest does not cover")
			}
			if got := readFile(t, filepath.Join(dest, "sub", ".git", "kept")); got != "covered by the digest" {
				t.Errorf("sub/.git/kept = %q", got)
			}
		})
	}
}
