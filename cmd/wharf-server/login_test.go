package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/oidctest"
)

// startSSO starts a provider (ada in platform-admins, bo in data-team)
// and wharf-server signing in through it.
func startSSO(t *testing.T, home string) (*oidctest.Provider, *servedWharf) {
	t.Helper()
	idp := oidctest.New(t, oidctest.Options{
		Users: []oidctest.User{
			{Subject: "ada", Email: "ada@example.com", Groups: []string{"platform-admins"}},
			{Subject: "bo", Email: "bo@example.com", Groups: []string{"data-team"}},
		},
		Clients: []oidctest.Client{{ID: "wharf-console", Secret: "s3cret"}, {ID: "wharf-cli"}},
	})
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := launch(t, home, []string{"--demo", "",
		"--oidc-issuer", idp.Issuer, "--oidc-client-id", "wharf-console", "--oidc-client-secret-file", secret,
		"--oidc-redirect-url", "http://127.0.0.1:7070/ui/oidc/callback", "--oidc-device-client-id", "wharf-cli",
		"--oidc-role", "platform-admins=admin", "--oidc-role", "data-team=developer"}, nil)
	return idp, s
}

// wharfLogin runs `wharf login` and plays the user: it reads the code the
// command prints and approves it at the provider as user.
func wharfLogin(t *testing.T, idp *oidctest.Provider, home, server, user string) (string, string) {
	t.Helper()
	cmd := exec.Command(clientBinary(t), "login", "--server", server)
	cmd.Env = append(os.Environ(), "WHARF_HOME="+home, "WHARF_TOKEN=", "WHARF_SERVER=", "WHARF_POLICY_URL=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	if err := idp.ApproveDevicePrompt(stderr, &errOut, user); err != nil {
		t.Error(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wharf login: %v\n%s%s", err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

type loginFile struct {
	Token        string    `json:"token"`
	TokenID      string    `json:"tokenId"`
	RefreshToken string    `json:"refreshToken"`
	ExpiresAt    time.Time `json:"expiresAt"`
}

func readLogin(t *testing.T, home string) (loginFile, map[string]any) {
	t.Helper()
	p := filepath.Join(home, "login.json")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("login.json mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(p)
	var lf loginFile
	var all map[string]any
	if json.Unmarshal(raw, &lf) != nil || json.Unmarshal(raw, &all) != nil {
		t.Fatalf("login.json: %s", raw)
	}
	return lf, all
}

// wharf login through the device flow: the token works (an admin's
// login lists tokens without --token), whoami names the person, an
// expired token renews itself through the refresh token, and logout
// revokes the wharf token (401) and the provider's refresh token.
func TestWharfLoginWhoamiRefreshLogout(t *testing.T) {
	home := t.TempDir()
	idp, s := startSSO(t, home)
	defer s.stop(t)

	out, errOut := wharfLogin(t, idp, home, s.info.URL, "ada")
	if !strings.Contains(out, "signed in to "+s.info.URL+" as ada@example.com (role admin)") || !strings.Contains(errOut, idp.Issuer+"/device") {
		t.Fatalf("wharf login:\n%s%s", out, errOut)
	}
	first, _ := readLogin(t, home)
	if code, body := httpGet(t, s.info.URL+"/v1/auth/whoami", first.Token); code != 200 || !strings.Contains(body, "ada@example.com") {
		t.Fatalf("the login's token: %d %s", code, body)
	}
	code, out, stderr := runWharf(t, home, "token", "list", "--server", s.info.URL)
	if code != 0 || !strings.Contains(out, first.TokenID) {
		t.Fatalf("token list with the login's token: exit %d\n%s%s", code, out, stderr)
	}
	// The login recorded the server: policy pull needs no flag and no
	// token (the login's goes to its server).
	code, out, stderr = runWharf(t, home, "policy", "pull")
	if code != 0 || !strings.Contains(out, "server:    "+s.info.URL) {
		t.Fatalf("policy pull after login: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runWharf(t, home, "whoami", "--json")
	var who struct {
		Subject, Email, Role, Server, TokenID string
		Groups                                []string
		ExpiresAt                             time.Time
	}
	if code != 0 || json.Unmarshal([]byte(out), &who) != nil || who.Subject != "ada" || who.Email != "ada@example.com" || who.Role != "admin" ||
		who.Server != s.info.URL || strings.Join(who.Groups, ",") != "platform-admins" || who.TokenID != first.TokenID {
		t.Fatalf("whoami --json: exit %d\n%s%s", code, out, stderr)
	}

	// The token expires: the next command renews it without asking.
	_, all := readLogin(t, home)
	all["expiresAt"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	raw, _ := json.Marshal(all)
	if err := os.WriteFile(filepath.Join(home, "login.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runWharf(t, home, "whoami")
	second, _ := readLogin(t, home)
	if code != 0 || !strings.Contains(out, "role:    admin") || second.TokenID == first.TokenID || second.RefreshToken == first.RefreshToken ||
		!second.ExpiresAt.After(time.Now()) {
		t.Fatalf("whoami after expiry: exit %d\n%s%s\nfirst %+v second %+v", code, out, stderr, first, second)
	}
	if idp.RefreshTokenLive(first.RefreshToken) || !idp.RefreshTokenLive(second.RefreshToken) {
		t.Fatal("the refresh token did not rotate")
	}

	code, out, stderr = runWharf(t, home, "logout")
	if code != 0 || !strings.Contains(out, "signed out of "+s.info.URL) || strings.Contains(stderr, "warning") {
		t.Fatalf("logout: exit %d\n%s%s", code, out, stderr)
	}
	if code, body := httpGet(t, s.info.URL+"/v1/auth/whoami", second.Token); code != 401 {
		t.Fatalf("the token after logout: %d %s", code, body)
	}
	if idp.RefreshTokenLive(second.RefreshToken) {
		t.Fatal("the provider's refresh token lives after logout")
	}
	if _, err := os.Stat(filepath.Join(home, "login.json")); !os.IsNotExist(err) {
		t.Fatalf("login.json after logout: %v", err)
	}
	code, _, stderr = runWharf(t, home, "whoami")
	if code != 2 || !strings.Contains(stderr, "not signed in") || !strings.Contains(stderr, "wharf login") {
		t.Fatalf("whoami signed out: exit %d\n%s", code, stderr)
	}
}

// A developer's login is a developer's token: admin routes refuse it.
func TestWharfLoginDeveloper(t *testing.T) {
	home := t.TempDir()
	idp, s := startSSO(t, home)
	defer s.stop(t)
	out, errOut := wharfLogin(t, idp, home, s.info.URL, "bo")
	if !strings.Contains(out, "as bo@example.com (role developer)") {
		t.Fatalf("wharf login:\n%s%s", out, errOut)
	}
	code, _, stderr := runWharf(t, home, "token", "list")
	if code == 0 || !strings.Contains(stderr, "role \"developer\" may not") {
		t.Fatalf("token list as a developer: exit %d\n%s", code, stderr)
	}
}

// Bad --oidc flags are usage errors naming the flag; the secret never
// comes from argv.
func TestServeOIDCFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--oidc-client-id", "x"}, "--oidc-* flags given without --oidc-issuer"},
		{[]string{"--oidc-issuer", "http://idp.example.com", "--oidc-client-id", "x"}, "is not an https URL"},
		{[]string{"--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "x", "--oidc-client-secret-file", "/nonexistent/secret"}, "--oidc-client-secret-file"},
		{[]string{"--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "x", "--oidc-redirect-url", "https://w.example.com/ui/oidc/callback"}, "WHARF_OIDC_CLIENT_SECRET"},
		{[]string{"--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "x", "--oidc-redirect-url", "https://w.example.com/ui/oidc/callback", "--oidc-role", "g=root"}, "--oidc-role"},
	} {
		code, _, stderr := runServer(t, t.TempDir(), append([]string{"--addr", "127.0.0.1:0"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 naming %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
}
