// Command startfloor links the third-party packages the wharf client
// (cmd/wharf) links, and nothing else, then exits. bench/startfloor.sh
// times it next to `wharf --version` and a Go program that links nothing
// (empty/): what is left between this program and `wharf --version` is
// wharf's own start cost, and what this program costs above the empty one
// is paid by any binary that carries these libraries (their package
// initialization and the page faults of a binary this size), whatever it
// does afterwards.
//
// Usage: go build -o startfloor ./bench/startfloor && ./startfloor
//
// It imports every third-party package that a package linked into the
// client imports; floor_test.go fails when the two drift apart. The
// server, cmd/wharf-server, links more (echo, etcd, gRPC): it is not what
// developers, CI and agents start.
package main

import (
	"os"

	_ "github.com/coreos/go-oidc/v3/oidc"
	_ "github.com/go-git/go-billy/v5"
	_ "github.com/go-git/go-billy/v5/osfs"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/go-git/go-git/v5/config"
	_ "github.com/go-git/go-git/v5/plumbing"
	_ "github.com/go-git/go-git/v5/plumbing/cache"
	_ "github.com/go-git/go-git/v5/plumbing/filemode"
	_ "github.com/go-git/go-git/v5/plumbing/object"
	_ "github.com/go-git/go-git/v5/plumbing/transport"
	_ "github.com/go-git/go-git/v5/plumbing/transport/client"
	_ "github.com/go-git/go-git/v5/plumbing/transport/http"
	_ "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	_ "github.com/go-git/go-git/v5/storage/filesystem"
	_ "github.com/gofrs/flock"
	_ "github.com/modelcontextprotocol/go-sdk/auth"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/modelcontextprotocol/go-sdk/oauthex"
	_ "github.com/open-policy-agent/opa/v1/ast"
	_ "github.com/open-policy-agent/opa/v1/bundle"
	_ "github.com/open-policy-agent/opa/v1/metrics"
	_ "github.com/open-policy-agent/opa/v1/rego"
	_ "github.com/open-policy-agent/opa/v1/storage"
	_ "github.com/open-policy-agent/opa/v1/storage/inmem"
	_ "github.com/open-policy-agent/opa/v1/tester"
	_ "github.com/open-policy-agent/opa/v1/topdown"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/sigstore/sigstore/pkg/cryptoutils"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/pflag"
	_ "github.com/spf13/viper"
	_ "go.etcd.io/bbolt"
	_ "go.etcd.io/bbolt/errors"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/net/proxy"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
)

func main() { os.Exit(0) }
