package marketplace

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// FuzzCheckTreeName: a name the checkout accepts is one path element that
// no filesystem wharf runs on takes for .git, a parent or a device.
func FuzzCheckTreeName(f *testing.F) {
	for _, s := range []string{"README.md", ".git", ".GIT", "git~1", ".git.", ".git ::$INDEX_ALLOCATION",
		".g\u200cit", "..", ".", "", "a/b", `a\b`, "con", "CON.txt", "console.md", "nul ", "a\x00b",
		".gitmodules", "SKILL.md", "ünïcode ß", "c:evil", "C:"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, name string, link bool) {
		mode := filemode.Regular
		if link {
			mode = filemode.Symlink
		}
		if checkTreeName(name, mode) != nil {
			return
		}
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\") {
			t.Fatalf("accepted %q", name)
		}
		for i := 0; i < len(name); i++ {
			if name[i] < 0x20 || name[i] == 0x7f {
				t.Fatalf("accepted %q with a control character", name)
			}
		}
		folded := strings.TrimRight(strings.ToLower(hfsIgnored.Replace(name)), ". ")
		if folded == ".git" || folded == "git~1" {
			t.Fatalf("accepted %q, which stands for .git", name)
		}
	})
}
