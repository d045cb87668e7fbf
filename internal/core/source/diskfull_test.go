package source

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// A full disk while writing the tree is not the plugin's fault: the hint
// says to free disk space, not to remove an entry of the plugin.
func TestDiskFullHint(t *testing.T) {
	req := &Request{Plugin: "p@m"}
	for _, cause := range diskFullCauses {
		werr := fmt.Errorf("write commands/a.md: %w", &fs.PathError{Op: "write", Path: "/cache/stage/commands/a.md", Err: cause})
		err := fail(req, "remove the offending entry from the plugin directory", werr)
		h := plugin.HintOf(err)
		if !strings.Contains(h, "free space") || strings.Contains(h, "remove the offending entry") {
			t.Errorf("%v: hint %q", cause, h)
		}
	}
	other := fail(req, "remove the offending entry from the plugin directory", &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES})
	if h := plugin.HintOf(other); !strings.Contains(h, "remove the offending entry") {
		t.Errorf("another error lost its hint: %q", h)
	}
}
