package login_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/client/login"
)

// Load and RecordedServer never panic on any file; what Load accepts
// names a server and a token.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{`{"server":"http://127.0.0.1:1","token":"wharf_x"}`, `{}`, `[`, `{"server":1}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		home := t.TempDir()
		if err := os.WriteFile(login.Path(home), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, login.ServerFileName), b, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := login.Load(home, nil)
		if err == nil && st != nil && (st.Server == "" || st.Token == "") {
			t.Fatalf("accepted %q as %+v", b, st)
		}
		_, _ = login.RecordedServer(home)
	})
}
