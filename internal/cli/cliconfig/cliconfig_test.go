package cliconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/plugin"
)

// The first existing file is read; an unknown key is a warning naming the
// file, the key and the known keys; a bad file is a parse error naming it.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	yml, js := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "config.json")
	if err := os.WriteFile(yml, []byte("git-timeout: 5s\ncolour: blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := viper.New()
	var warn bytes.Buffer
	if err := Read(v, []string{js, yml}, &warn, "wharf-server"); err != nil {
		t.Fatal(err)
	}
	if v.GetString("git-timeout") != "5s" {
		t.Errorf("git-timeout = %q", v.GetString("git-timeout"))
	}
	w := warn.String()
	if !strings.HasPrefix(w, "wharf-server: warning: "+yml) || !strings.Contains(w, `"colour"`) || !strings.Contains(w, "gitlab-host, inventory.interval") {
		t.Errorf("warning = %q", w)
	}
	if err := os.WriteFile(js, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	var pe *plugin.Error
	if err := Read(viper.New(), []string{js, yml}, &warn, "wharf"); !errors.As(err, &pe) || pe.Object != js || pe.Type != plugin.TypeManifestParse {
		t.Errorf("bad file: %v", err)
	}
	if err := Read(viper.New(), []string{filepath.Join(dir, "none.json")}, &warn, "wharf"); err != nil {
		t.Errorf("no file: %v", err)
	}
}

// A bad duration names the key and its environment variable.
func TestDuration(t *testing.T) {
	v := viper.New()
	v.Set("inventory.timeout", "-1s")
	v.Set("gc-grace", "0s")
	v.Set("lock-timeout", "soon")
	if d, err := Duration(v, "gc-grace", 0); err != nil || d != 0 {
		t.Errorf("gc-grace 0s with least 0: %v %v", d, err)
	}
	for key, want := range map[string]string{"inventory.timeout": "must be positive", "lock-timeout": "invalid duration"} {
		_, err := Duration(v, key, time.Nanosecond)
		var pe *plugin.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v is not a plugin.Error", key, err)
			continue
		}
		if pe.Type != TypeUsage || pe.Object != key || !strings.Contains(err.Error(), want) ||
			!strings.Contains(pe.Hint, "WHARF_"+strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(key))) {
			t.Errorf("%s: %v (hint %q)", key, err, pe.Hint)
		}
	}
}
