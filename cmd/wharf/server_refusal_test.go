package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/cli/shell"
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

// A refused credential reads the same from every command that talks to
// the server: exit 6, one message naming the server, one hint, never the
// raw JSON envelope; --json carries the same under one type.
func TestRefusedCredentialsIsOneErrorEverywhere(t *testing.T) {
	srv := newPolicyAPI(t)
	bad := newPolicyClient(t, "wharf_not-a-token")
	wantMsg := "wharf: wharf server " + srv.hs.URL + " refused the credentials (401 unauthorized): the bearer token is unknown or was revoked (Authorization)\n" +
		"Try: send a valid token (wharf: --token or WHARF_TOKEN); an admin of this server creates one with: wharf token create\n"
	cmds := serverCommands(srv.hs.URL)
	cmds["whoami"] = []string{"whoami"}
	// A policy server named for a command that only consults policy
	// refuses the same way.
	cmds["marketplace add (policy server)"] = []string{"--policy-url", srv.hs.URL, "marketplace", "add", localMarketplace(t, t.TempDir(), "corp")}
	signedIn := signedInClient(t, srv.hs.URL, "wharf_not-a-token")
	for name, args := range cmds {
		bad := bad
		if name == "whoami" {
			bad = signedIn
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
	// A token the server knows but whose role may not do this is refused
	// the same way (403), with the roles in the message.
	agent := newPolicyClient(t, srv.agent)
	code, _, stderr := agent.run("token", "list", "--server", srv.hs.URL)
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
