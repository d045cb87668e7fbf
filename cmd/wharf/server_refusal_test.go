package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/internal/testutil/oidctest"
)

// serverCommands are the commands that talk to a wharf server, each
// pointed at base.
func serverCommands(base string) map[string][]string {
	return map[string][]string{
		"token list":              {"token", "list", "--server", base},
		"policy export channel":   {"--policy-url", base, "policy", "export", "--format", "claude", "--channel", "approved"},
		"inventory report":        {"inventory", "report", "--server", base},
		"policy pull":             {"--policy-url", base, "policy", "pull"},
		"server marketplace list": {"server", "marketplace", "list", "--server", base},
		"request":                 {"request", "deploy@corp", "--reason", "ship it", "--server", base},
		"request list":            {"request", "list", "--server", base},
	}
}

// signedInClient is a client whose home holds a login to base with
// token (not expired), for the commands that use the login: whoami.
func signedInClient(t *testing.T, base, token string) *policyClient {
	t.Helper()
	c := newPolicyClient(t, "")
	raw, err := json.Marshal(map[string]any{"server": base, "issuer": base, "clientId": "wharf-cli",
		"token": token, "tokenId": "t-login", "role": "user", "subject": "ada", "expiresAt": time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.home, "login.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// ssoPolicyAPI is newPolicyAPI with single sign-on through a real
// OpenID provider on loopback (ada, in platform-admins, signs in as an
// admin). The server's identity reads its clock through skew, so that a
// test can make it refuse the provider's ID tokens as expired.
func ssoPolicyAPI(t *testing.T) (*policyAPI, *oidctest.Provider, *atomic.Int64) {
	t.Helper()
	idp := oidctest.New(t, oidctest.Options{
		Users:   []oidctest.User{{Subject: "ada", Email: "ada@example.com", Groups: []string{"platform-admins"}}},
		Clients: []oidctest.Client{{ID: "wharf-console", Secret: "s3cret"}, {ID: "wharf-cli"}},
	})
	skew := new(atomic.Int64)
	srv := newPolicyAPIWith(t, func(d *api.Deps) {
		prov, err := identity.New(identity.Config{Issuer: idp.Issuer, ClientID: "wharf-console", ClientSecret: "s3cret",
			RedirectURL: "http://127.0.0.1:7070" + identity.CallbackPath, DeviceClientID: "wharf-cli",
			Roles: map[string]api.Role{"platform-admins": api.RoleAdmin}}, d.Store,
			func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
		if err != nil {
			t.Fatal(err)
		}
		d.Identity = prov
	})
	return srv, idp, skew
}

// login runs `wharf login --server base` (with args first) in c's home
// and plays the user: it approves the code the command prints at idp as
// user. It returns the exit code, stdout and stderr.
func (c *policyClient) login(idp *oidctest.Provider, base, user string, args ...string) (int, string, string) {
	c.t.Helper()
	cmd := exec.Command(wharfBinary(c.t), append(args, "login", "--server", base)...)
	cmd.Env = c.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	if err := idp.ApproveDevicePrompt(stderr, &errOut, user); err != nil {
		c.t.Error(err)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// loginTokenID is the token id c's login.json holds.
func (c *policyClient) loginTokenID() string {
	c.t.Helper()
	raw, err := os.ReadFile(filepath.Join(c.home, "login.json"))
	var lf struct {
		TokenID string `json:"tokenId"`
	}
	if err != nil || json.Unmarshal(raw, &lf) != nil || lf.TokenID == "" {
		c.t.Fatalf("login.json: %v %s", err, raw)
	}
	return lf.TokenID
}

// A refused credential reads the same from every command that talks to
// the server: exit 6, one message naming the server, one hint, never the
// raw JSON envelope; --json carries the same under one type. wharf login
// is one of them: a signed-in user whose token an admin revoked reads the
// same message, and a sign-in the server refuses (at the login or at the
// renewal of an expired one) reads the same apart from the server's
// reason and hint.
func TestRefusedCredentialsIsOneErrorEverywhere(t *testing.T) {
	srv, idp, skew := ssoPolicyAPI(t)
	bad := newPolicyClient(t, "wharf_not-a-token")
	wantMsg := "wharf: wharf server " + srv.hs.URL + " refused the credentials (401 unauthorized): the bearer token is unknown or was revoked (Authorization)\n" +
		"Try: send a valid token (wharf: --token or WHARF_TOKEN); an admin of this server creates one with: wharf token create\n"
	cmds := serverCommands(srv.hs.URL)
	cmds["whoami"] = []string{"whoami"}
	// A policy server named for a command that only consults policy
	// refuses the same way.
	cmds["marketplace add (policy server)"] = []string{"--policy-url", srv.hs.URL, "marketplace", "add", localMarketplace(t, t.TempDir(), "corp")}
	signedIn := signedInClient(t, srv.hs.URL, "wharf_not-a-token")
	// A real login, whose token an admin then revokes.
	revoked := newPolicyClient(t, "")
	if code, out, stderr := revoked.login(idp, srv.hs.URL, "ada"); code != 0 || !strings.Contains(out, "signed in to "+srv.hs.URL) {
		t.Fatalf("wharf login: exit %d\n%s%s", code, out, stderr)
	}
	srv.call(http.MethodDelete, "/v1/tokens/"+revoked.loginTokenID(), "", nil, http.StatusNoContent, nil)
	cmds["whoami (revoked login)"] = []string{"whoami"}
	for name, args := range cmds {
		bad := bad
		switch name {
		case "whoami":
			bad = signedIn
		case "whoami (revoked login)":
			bad = revoked
		}
		code, out, stderr := bad.run(args...)
		if code != 6 || stderr != wantMsg {
			t.Errorf("%s: exit %d, want 6 and\n%s\ngot stdout %q stderr\n%s", name, code, wantMsg, out, stderr)
		}
		code, _, stderr = bad.run(append([]string{"--json"}, args...)...)
		var je shell.JSONError
		if err := json.Unmarshal([]byte(stderr), &je); err != nil || code != 6 || je.Error.Type != shell.TypeCredentialsRefused ||
			je.Error.Message != strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(wantMsg, "\n", 2)[0], "wharf: "), "\n") ||
			!strings.Contains(je.Error.Hint, "WHARF_TOKEN") || strings.Contains(stderr, `{\"error\"`) {
			t.Errorf("%s --json: exit %d %v\n%s", name, code, err, stderr)
		}
	}

	// The server refuses the provider's ID token (its clock is two hours
	// ahead, so the token has expired): at the login, and at the renewal
	// of a login whose token expired. Exit 6 and the one message, with the
	// server's reason and hint; the login is not recorded.
	loginMsg := regexp.MustCompile(`(?m)^wharf: wharf server ` + regexp.QuoteMeta(srv.hs.URL) +
		` refused the credentials \(401 unauthorized\): sign-in refused: the ID token is not valid: [^\n]*\(idToken\)\nTry: run wharf login again\n\z`)
	expiring := newPolicyClient(t, "")
	if code, out, stderr := expiring.login(idp, srv.hs.URL, "ada"); code != 0 {
		t.Fatalf("wharf login: exit %d\n%s%s", code, out, stderr)
	}
	skew.Store(int64(2 * time.Hour))
	refused := newPolicyClient(t, "")
	code, out, stderr := refused.login(idp, srv.hs.URL, "ada")
	if code != 6 || out != "" || !loginMsg.MatchString(stderr) {
		t.Errorf("wharf login refused by the server: exit %d, want 6 and the one message\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(refused.home, "login.json")); !os.IsNotExist(err) {
		t.Errorf("a refused login left login.json: %v", err)
	}
	code, _, stderr = refused.login(idp, srv.hs.URL, "ada", "--json")
	var je shell.JSONError
	if i := strings.Index(stderr, "{"); code != 6 || i < 0 || json.Unmarshal([]byte(stderr[i:]), &je) != nil ||
		je.Error.Type != shell.TypeCredentialsRefused || !strings.HasPrefix(je.Error.Message, "wharf server "+srv.hs.URL+" refused the credentials (401 unauthorized): sign-in refused") ||
		je.Error.Hint != "run wharf login again" {
		t.Errorf("wharf login --json refused by the server: exit %d\n%s", code, stderr)
	}
	lp := filepath.Join(expiring.home, "login.json")
	raw, err := os.ReadFile(lp)
	var all map[string]any
	if err != nil || json.Unmarshal(raw, &all) != nil {
		t.Fatalf("login.json: %v %s", err, raw)
	}
	all["expiresAt"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	raw, _ = json.Marshal(all)
	if err := os.WriteFile(lp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = expiring.run("whoami")
	if code != 6 || out != "" || !loginMsg.MatchString(stderr) {
		t.Errorf("whoami whose renewal the server refuses: exit %d, want 6 and the one message\n%s%s", code, out, stderr)
	}
	skew.Store(0)

	// A token the server knows but whose role may not do this is refused
	// the same way (403), with the roles in the message.
	agent := newPolicyClient(t, srv.agent)
	code, _, stderr = agent.run("token", "list", "--server", srv.hs.URL)
	if code != 6 || !strings.HasPrefix(stderr, "wharf: wharf server "+srv.hs.URL+" refused the credentials (403 forbidden): role \"agent\"") {
		t.Errorf("agent token lists tokens: exit %d\n%s", code, stderr)
	}
}

// A server that does not answer reads the same from every command: exit 1,
// one message naming the server and the cause (not the route), one hint.
func TestUnreachableServerIsOneErrorEverywhere(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	cmds := serverCommands(closed)
	cmds["whoami"] = []string{"whoami"}
	want := ""
	for name, args := range cmds {
		c := newPolicyClient(t, "wharf_some-token")
		if name == "whoami" {
			c = signedInClient(t, closed, "wharf_some-token")
		}
		code, out, stderr := c.run(args...)
		if code != 1 || !strings.HasPrefix(stderr, "wharf: wharf server "+closed+" is unreachable: ") ||
			!strings.Contains(stderr, "Try: check the server's URL and that wharf-server is running there\n") || strings.Contains(stderr, "/v1/") {
			t.Errorf("%s: exit %d\n%s%s", name, code, out, stderr)
		}
		if want == "" {
			want = stderr
		} else if stderr != want {
			t.Errorf("%s says\n%s\nanother command says\n%s", name, stderr, want)
		}
	}
}
