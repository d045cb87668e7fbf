package install

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// An install of several plugins draws a count bar on the terminal it is
// given, and marks a reinstall of the same version as already installed.
func TestInstallBarAndAlreadyInstalled(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": {"b", "c"}, "b": nil, "c": nil}, "")
	var bar bytes.Buffer
	w.in.o.ProgressBar = &bar
	res, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bar.String(), "plugins") || !strings.Contains(bar.String(), "/3)") {
		t.Fatalf("no count bar for a three-plugin install: %q", bar.String())
	}
	for _, i := range res.Installed {
		if i.Already {
			t.Errorf("%s marked already installed on its first install", i.ID)
		}
	}
	bar.Reset()
	w.in.o.ProgressBar = nil
	res, err = w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range res.Installed {
		if !i.Already {
			t.Errorf("%s not marked already installed on a reinstall", i.ID)
		}
	}
	if bar.Len() != 0 {
		t.Fatalf("a bar was drawn without a terminal: %q", bar.String())
	}
}
