package userconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func TestSetLoadSensitive(t *testing.T) {
	home := t.TempDir()
	id := plugin.MustParseID("ops@corp")
	region := plugin.UserConfigOption{Key: "region"}
	token := plugin.UserConfigOption{Key: "api_token", Sensitive: true}
	port := plugin.UserConfigOption{Key: "port", Type: "number"}
	if err := Set(home, id, region, "eu-west-1"); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, id, token, "s3cret"); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, id, port, "eighty"); err == nil {
		t.Error("a word was stored for a number option")
	}
	got, err := Load(home, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, map[string]string{"region": "eu-west-1", "api_token": "s3cret"}) {
		t.Fatalf("Load = %v", got)
	}
	plain, secret := Files(home, id)
	fi, err := os.Stat(secret)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %v mode %v; want 0600", err, fi.Mode())
	}
	if di, _ := os.Stat(filepath.Dir(secret)); di.Mode().Perm() != 0o700 {
		t.Errorf("secret dir mode %v; want 0700", di.Mode().Perm())
	}
	if b, _ := os.ReadFile(plain); string(b) == "" || contains(string(b), "s3cret") {
		t.Errorf("plain file holds %q", b)
	}
	// An option that becomes sensitive moves to the secret file.
	region.Sensitive = true
	if err := Set(home, id, region, "us-east-1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(plain); contains(string(b), "east") || contains(string(b), "west") {
		t.Errorf("plain file still holds the region: %s", b)
	}
	if err := Unset(home, id, "api_token"); err != nil {
		t.Fatal(err)
	}
	got, _ = Load(home, id)
	if !reflect.DeepEqual(got, map[string]string{"region": "us-east-1"}) {
		t.Fatalf("after unset: %v", got)
	}
	if err := os.WriteFile(plain, []byte("[1]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(home, id); err == nil {
		t.Error("a corrupt values file was read")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
