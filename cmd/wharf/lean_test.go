package main

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// serverOnly are the module paths only wharf-server may link: the etcd
// client, gRPC, protobuf and the web framework, and wharf's server packages.
var serverOnly = []string{
	"go.etcd.io/etcd/", "google.golang.org/grpc", "google.golang.org/protobuf", "github.com/labstack/echo",
	"github.com/wharfhq/wharf/internal/server/",
}

// protobufVia is the one library the client may reach protobuf through:
// OPA's bundle and IR packages are generated protobuf code that its rego
// package links, whatever the caller evaluates.
const protobufVia = "github.com/open-policy-agent/opa/"

func isServerOnly(p string) bool {
	for _, s := range serverOnly {
		if strings.HasSuffix(s, "/") && strings.HasPrefix(p, s) || p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// leanViolations lists, for what pkg links, each import of a server-only
// package from a package that is not itself server-only ("a imports b"),
// so the message names the edge to cut.
func leanViolations(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var bad []string
	linked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		linked++
		if len(f) == 0 || isServerOnly(f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if !isServerOnly(imp) {
				continue
			}
			if strings.HasPrefix(imp, "google.golang.org/protobuf") && strings.HasPrefix(f[0], protobufVia) {
				continue
			}
			bad = append(bad, f[0]+" imports "+imp)
		}
	}
	if linked < 10 {
		t.Fatalf("go list -deps %s listed %d packages; the test is not looking at it", pkg, linked)
	}
	sort.Strings(bad)
	return bad
}

// The client links no etcd, gRPC or echo, reaches protobuf only through
// OPA, and links none of wharf's server packages: every wharf command pays
// at start for what the binary links.
func TestClientLinksNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, e := range leanViolations(t, ".") {
		t.Errorf("cmd/wharf links server code: %s (it belongs in wharf-server)", e)
	}
}

// The agent runtime, embedded in other programs, links none of them either.
func TestAgentLinksNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, e := range leanViolations(t, "../../agent") {
		t.Errorf("package agent links server code: %s", e)
	}
}

// `wharf serve` of earlier versions says where the server went; --version
// answers without reading any state.
func TestServeMovedAndVersion(t *testing.T) {
	var out, errb strings.Builder
	t.Setenv("WHARF_HOME", t.TempDir())
	if code := runInTest([]string{"serve", "--addr", "127.0.0.1:0"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "wharf-server") || !strings.Contains(errb.String(), "go run ./cmd/wharf-server") {
		t.Fatalf("wharf serve: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := runInTest([]string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "wharf ") {
		t.Fatalf("wharf --version: exit %d %q %q", code, out.String(), errb.String())
	}
}
