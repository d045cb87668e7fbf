// Command startfloor links the third-party packages wharf's own packages
// import, and nothing else, then exits. bench/install.sh times it next to a
// Go program that links nothing and next to `wharf --help`: what is left
// between this program and `wharf --help` is wharf's own start cost, and
// what this program costs above the empty one is paid by any binary that
// carries these libraries (their package initialization and the page faults
// of a binary this size), whatever it does afterwards.
//
// Usage: go build -o startfloor ./bench/startfloor && ./startfloor
//
// It imports every third-party package that a package linked into wharf
// imports; floor_test.go fails when the two drift apart.
package main

import (
	"os"

	_ "github.com/go-git/go-billy/v5"
	_ "github.com/go-git/go-billy/v5/osfs"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/go-git/go-git/v5/config"
	_ "github.com/go-git/go-git/v5/plumbing"
	_ "github.com/go-git/go-git/v5/plumbing/cache"
	_ "github.com/go-git/go-git/v5/plumbing/filemode"
	_ "github.com/go-git/go-git/v5/plumbing/object"
	_ "github.com/go-git/go-git/v5/plumbing/transport"
	_ "github.com/go-git/go-git/v5/plumbing/transport/http"
	_ "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	_ "github.com/go-git/go-git/v5/storage/filesystem"
	_ "github.com/gofrs/flock"
	_ "github.com/labstack/echo/v4"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/open-policy-agent/opa/v1/ast"
	_ "github.com/open-policy-agent/opa/v1/bundle"
	_ "github.com/open-policy-agent/opa/v1/metrics"
	_ "github.com/open-policy-agent/opa/v1/rego"
	_ "github.com/open-policy-agent/opa/v1/storage"
	_ "github.com/open-policy-agent/opa/v1/storage/inmem"
	_ "github.com/open-policy-agent/opa/v1/tester"
	_ "github.com/open-policy-agent/opa/v1/topdown"
	_ "github.com/open-policy-agent/opa/v1/util"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/sigstore/sigstore/pkg/cryptoutils"
	_ "github.com/sigstore/sigstore/pkg/signature"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/pflag"
	_ "github.com/spf13/viper"
	_ "go.etcd.io/bbolt"
	_ "go.etcd.io/bbolt/errors"
	_ "go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.uber.org/zap"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "golang.org/x/time/rate"
)

func main() { os.Exit(0) }
