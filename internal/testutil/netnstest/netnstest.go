// Package netnstest runs a test inside a network namespace of its own, in
// which addresses that are public elsewhere (203.0.113.7, a documentation
// address) sit on the loopback interface: a test can serve a "public" host
// without any packet leaving the machine.
package netnstest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// PublicAddr is an address the private-address rules treat as public
// (TEST-NET-3, RFC 5737), placed on lo inside the namespace.
const PublicAddr = "203.0.113.7"

// insideEnv marks the re-executed test binary: its value is the test that
// runs inside the namespace.
const insideEnv = "WHARF_NETNS_TEST"

// Enter runs the calling test inside a new network namespace with lo up
// and addrs (PublicAddr when none) on it. In the parent process it
// re-executes the test binary for this test only under unshare(1), reports
// the child's output, fails when the child fails, and returns false: the
// caller returns. In the child it returns true: the caller goes on.
//
// Only a top-level test may call it. The test is skipped, with the reason,
// when unshare or ip is not installed, or when this user may not create a
// namespace; it never skips as root on Linux, where CI runs it.
func Enter(t *testing.T, addrs ...string) bool {
	t.Helper()
	if os.Getenv(insideEnv) == t.Name() {
		ip := mustLookPath(t, "ip")
		if len(addrs) == 0 {
			addrs = []string{PublicAddr}
		}
		cmds := [][]string{{"link", "set", "lo", "up"}}
		for _, a := range addrs {
			if net.ParseIP(a) == nil {
				t.Fatalf("netnstest: %q is not an IP address", a)
			}
			bits := "/32"
			if strings.Contains(a, ":") {
				bits = "/128"
			}
			cmds = append(cmds, []string{"addr", "add", a + bits, "dev", "lo"})
		}
		for _, c := range cmds {
			if out, err := exec.Command(ip, c...).CombinedOutput(); err != nil {
				t.Fatalf("netnstest: ip %s: %v\n%s", strings.Join(c, " "), err, out)
			}
		}
		return true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("netnstest: Enter called from subtest %s; call it from a top-level test", t.Name())
	}
	if runtime.GOOS != "linux" {
		t.Skipf("network namespaces need Linux (this is %s)", runtime.GOOS)
	}
	unshare := mustLookPath(t, "unshare")
	mustLookPath(t, "ip")
	args := []string{"-n"}
	if os.Getuid() != 0 {
		args = []string{"-rn"} // a user namespace grants the capability
	}
	if out, err := exec.Command(unshare, append(args, "true")...).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("unshare %s cannot create a network namespace here: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		if os.Getuid() == 0 {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command(unshare, append(args, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")...)
	cmd.Env = append(os.Environ(), insideEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("inside a network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the test failed inside its network namespace: %v", err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("the test did not run inside its network namespace (no PASS line for %s)", t.Name())
	}
	return false
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getuid() == 0 && runtime.GOOS == "linux" {
			t.Fatalf("%s is not installed: %v", name, err)
		}
		t.Skipf("%s is not installed (%v): this test needs a network namespace", name, err)
	}
	return p
}
