package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A registry record whose install path is not this home's version
// directory (a path outside the home) is damage doctor reports; --repair
// restores the plugin from the home's own cache.
func TestDoctorNoticesPathOutsideTheHome(t *testing.T) {
	w := doctorHome(t)
	outside := filepath.Join(t.TempDir(), "elsewhere", "a")
	putRaw(t, w.home, "a@m", []byte(`{"id":"a@m","version":"1.0.0","scope":"user","installPath":"`+outside+`"}`))
	out, _ := w.fail(1, "doctor")
	if !strings.Contains(out, "damaged record a@m") || !strings.Contains(out, "install path "+outside+" is not this home's version directory") {
		t.Fatalf("wharf doctor said %q", out)
	}
	out = w.ok("doctor", "--repair")
	if !strings.Contains(out, "restored a@m 1.0.0 (from the cache)") {
		t.Fatalf("wharf doctor --repair said %q", out)
	}
	w.wantBothActive()
	if out := w.ok("doctor"); !strings.Contains(out, "ok, 2 installed") {
		t.Fatalf("wharf doctor after the repair said %q", out)
	}
}
