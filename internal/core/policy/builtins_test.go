package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// A builtin that fails inside an admin rule refuses the request and names
// the layer, module and rule; without strict builtin errors the rule would
// simply not apply and the request would be allowed.
func TestAdminRuleBuiltinErrorRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		module string
		rule   string
		line   string
	}{
		"to_number": {
			module: "package wharf.admin.org\n\ndeny contains \"no\" if {\n\tto_number(\"seven\") > 5\n}\n",
			rule:   "deny", line: "line 4",
		},
		"runtime regex": {
			module: "package wharf.admin.org\n\npattern := concat(\"\", [\"(\", input.action])\n\nbad if regex.match(pattern, input.plugin)\n\ndeny contains \"matched\" if bad\n",
			rule:   "bad", line: "line 5",
		},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := NewEngine([]Layer{{Name: "org", Modules: map[string]string{"rules.rego": c.module}}}, WithCache(16))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second from the cache, were a failure cached
				d, err := e.Decide(ctx, Request{Action: ActionInstall, Plugin: mustID("a@m")})
				if d.Allowed {
					t.Fatalf("a failing builtin allowed the request: %+v", d)
				}
				var pe *plugin.Error
				if !errors.As(err, &pe) || pe.Type != plugin.TypePolicyDenied || pe.Layer != plugin.LayerPolicy {
					t.Fatalf("err = %v, want a policy denial", err)
				}
				if len(d.Reasons) != 1 || d.Reasons[0].Layer != "org" || d.Reasons[0].Rule != c.rule {
					t.Fatalf("reasons %+v, want layer org rule %s", d.Reasons, c.rule)
				}
				for _, want := range []string{"rules.rego", c.line, "rule " + c.rule} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
			}
		})
	}
}

// Admin modules that reach the network, the clock, randomness or the
// runtime are refused when the policy is built, naming file and line.
func TestAdminModuleForbiddenBuiltinsRejectedAtLoad(t *testing.T) {
	for call, body := range map[string]string{
		"http.send":          "r := http.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1/\"})\n\tr.status_code == 200",
		"net.lookup_ip_addr": "net.lookup_ip_addr(\"example.com\")",
		"time.now_ns":        "time.now_ns() > 0",
		"rand.intn":          "rand.intn(\"x\", 10) == 1",
		"uuid.rfc4122":       "x := uuid.rfc4122(\"a\")\n\tx != \"\"",
		"opa.runtime":        "opa.runtime().env.X == \"1\"",
	} {
		t.Run(call, func(t *testing.T) {
			mod := "package wharf.admin.org\n\ndeny contains \"no\" if {\n\t" + body + "\n}\n"
			_, err := NewEngine([]Layer{{Name: "org", Modules: map[string]string{"net.rego": mod}}})
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Type != TypeBuiltinForbidden {
				t.Fatalf("err = %v, want %s", err, TypeBuiltinForbidden)
			}
			if pe.Object != "net.rego:4" || !strings.Contains(err.Error(), call) {
				t.Errorf("error %q (object %q) must name net.rego:4 and %s", err, pe.Object, call)
			}
		})
	}
	// Deterministic builtins are fine.
	ok := "package wharf.admin.org\n\ndeny contains \"no\" if {\n\tregex.match(\"^x\", input.plugin)\n\ttime.parse_rfc3339_ns(\"2020-01-01T00:00:00Z\") > 0\n}\n"
	if _, err := NewEngine([]Layer{{Name: "org", Modules: map[string]string{"ok.rego": ok}}}); err != nil {
		t.Fatal(err)
	}
}

// `wharf policy test` evaluates as the engine does: a builtin error fails
// the test instead of passing as "no deny", and a module the engine would
// refuse is refused.
func TestRunAdminTestsStrict(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "org.rego"), "package wharf.admin.org\n\ndeny contains \"no\" if to_number(input.plugin) > 5\n")
	writeFile(t, filepath.Join(dir, "org_test.rego"), "package wharf.admin.org_test\n\nimport data.wharf.admin.org\n\ntest_nothing_denied if count(org.deny) == 0 with input as {\"plugin\": \"seven\"}\n")
	res, err := RunTests(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Pass || !strings.Contains(res[0].Error, "to_number") {
		t.Fatalf("results %+v: the builtin error must fail the test", res)
	}
	writeFile(t, filepath.Join(dir, "org.rego"), "package wharf.admin.org\n\ndeny contains \"no\" if http.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1\"}).status_code == 200\n")
	if _, err := RunTests(ctx, dir); !strings.Contains(fmt.Sprint(err), "http.send") {
		t.Fatalf("err = %v, want the http.send call refused", err)
	}
}
