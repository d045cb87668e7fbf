package login_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/client/login"
)

// No login is nil; a login file that does not decode, or names no token,
// is a CorruptError naming the file.
func TestLoadCorrupt(t *testing.T) {
	home := t.TempDir()
	if st, err := login.Load(home, nil); st != nil || err != nil {
		t.Fatalf("no login: %v %v", st, err)
	}
	for _, body := range []string{"{not json", `{"server":"http://127.0.0.1:1"}`} {
		if err := os.WriteFile(login.Path(home), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var ce *login.CorruptError
		if _, err := login.Load(home, nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), login.Path(home)) {
			t.Fatalf("%q: %v", body, err)
		}
	}
	if err := login.Remove(home); err != nil {
		t.Fatal(err)
	}
	if err := login.Remove(home); err != nil {
		t.Fatalf("removing no login: %v", err)
	}
}

// An expired login without a refresh token is an ExpiredError whose hint
// is wharf login against the same server; a live one gives its token
// without touching the network.
func TestExpiredWithoutRefresh(t *testing.T) {
	home := t.TempDir()
	body := `{"server":"http://127.0.0.1:1","token":"wharf_x","expiresAt":"2020-01-01T00:00:00Z"}`
	if err := os.WriteFile(login.Path(home), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := login.Load(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ee *login.ExpiredError
	if _, err := st.Source().Token(context.Background()); !errors.As(err, &ee) || ee.Hint() != "run wharf login --server http://127.0.0.1:1" {
		t.Fatalf("expired: %v", err)
	}
	st.ExpiresAt = time.Now().Add(time.Hour)
	if tok, err := st.Source().Token(context.Background()); err != nil || tok != "wharf_x" {
		t.Fatalf("live: %q %v", tok, err)
	}
}

// A server whose sign-in has no device client refuses wharf login with
// NoDeviceLoginError; the recorded server round-trips and a bad one is
// named.
func TestNoDeviceLoginAndRecordedServer(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/auth/config" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"https://idp.example.com","name":"IdP"}`))
	}))
	defer hs.Close()
	home := t.TempDir()
	var nd *login.NoDeviceLoginError
	_, err := login.Login(context.Background(), home, hs.URL, nil, func(string, string, string) { t.Fatal("prompted") })
	if !errors.As(err, &nd) || nd.Hint() == "" {
		t.Fatalf("login: %v", err)
	}
	if s, err := login.RecordedServer(home); s != "" || err != nil {
		t.Fatalf("nothing recorded: %q %v", s, err)
	}
	if err := login.RecordServer(home, hs.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if s, err := login.RecordedServer(home); s != hs.URL || err != nil {
		t.Fatalf("recorded: %q %v", s, err)
	}
	if err := login.RecordServer(home, "ftp://x"); err == nil {
		t.Fatal("recorded an ftp URL")
	}
	if err := os.WriteFile(filepath.Join(home, login.ServerFileName), []byte(`{"server":"nope"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *login.CorruptError
	if _, err := login.RecordedServer(home); !errors.As(err, &ce) {
		t.Fatalf("a bad recorded server: %v", err)
	}
}
