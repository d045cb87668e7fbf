package settings

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// TestForgetEnabledRemovesOnlyTheNamedKeys: the named plugins' entries go,
// whatever their value; every other entry and every other key stays.
func TestForgetEnabledRemovesOnlyTheNamedKeys(t *testing.T) {
	p := Paths{Home: t.TempDir()}
	if err := os.WriteFile(p.File(ScopeUser), []byte(`{"enabledPlugins":{"a@m":true,"off@m":false,"keep@m":true},"model":"x","unknownKey":[1,2]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := ForgetEnabled(p, ScopeUser, []plugin.ID{plugin.MustParseID("a@m"), plugin.MustParseID("off@m"), plugin.MustParseID("never@m")})
	if err != nil {
		t.Fatal(err)
	}
	if file != p.File(ScopeUser) {
		t.Errorf("file = %q, want %q", file, p.File(ScopeUser))
	}
	data := mustRead(t, p.File(ScopeUser))
	s, err := Parse(p.File(ScopeUser), data)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.EnabledPlugins) != 1 || !s.EnabledPlugins[plugin.MustParseID("keep@m")] {
		t.Errorf("enabledPlugins = %v, want only keep@m", s.EnabledPlugins)
	}
	for _, k := range []string{`"model": "x"`, `"unknownKey"`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("%s lost:\n%s", k, data)
		}
	}
}

// TestForgetEnabledWritesNothingWhenNothingIsNamed: a missing file is not
// created, and a file without the keys is not rewritten.
func TestForgetEnabledWritesNothingWhenNothingIsNamed(t *testing.T) {
	p := Paths{Home: t.TempDir()}
	ids := []plugin.ID{plugin.MustParseID("a@m")}
	file, err := ForgetEnabled(p, ScopeUser, ids)
	if err != nil || file != "" {
		t.Fatalf("missing file: %q, %v", file, err)
	}
	if _, err := os.Stat(p.File(ScopeUser)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing settings file was created: %v", err)
	}
	const body = `{"enabledPlugins": {"b@m": true}}`
	if err := os.WriteFile(p.File(ScopeUser), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err = ForgetEnabled(p, ScopeUser, ids)
	if err != nil || file != "" {
		t.Fatalf("file without the key: %q, %v", file, err)
	}
	if got := string(mustRead(t, p.File(ScopeUser))); got != body {
		t.Errorf("a file without the key was rewritten: %s", got)
	}
}

// TestForgetEnabledRefusesBadFiles: a file that is not valid settings is
// refused, named, and left as it is; so is the managed scope.
func TestForgetEnabledRefusesBadFiles(t *testing.T) {
	p := Paths{Home: t.TempDir()}
	ids := []plugin.ID{plugin.MustParseID("a@m")}
	for _, body := range []string{`{"enabledPlugins": {"a@m": true}`, `{"enabledPlugins": ["a@m"]}`} {
		if err := os.WriteFile(p.File(ScopeUser), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ForgetEnabled(p, ScopeUser, ids)
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != TypeSettingsInvalid || !strings.Contains(err.Error(), p.File(ScopeUser)) {
			t.Errorf("%s: err = %v, want a settings error naming the file", body, err)
		}
		if got := string(mustRead(t, p.File(ScopeUser))); got != body {
			t.Errorf("%s: rewritten as %s", body, got)
		}
	}
	if _, err := ForgetEnabled(p, ScopeManaged, ids); err == nil {
		t.Error("ForgetEnabled wrote the managed scope")
	}
}
