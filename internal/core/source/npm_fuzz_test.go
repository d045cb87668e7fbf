package source

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

// FuzzNPMMetadata: whatever a registry answers for a package's metadata
// (dist-tags, versions, tarball URLs, integrity and shasum), fetching it
// fails with a materialization error or succeeds, never panics, and never
// leaves the loopback registry: every connection, whatever host the
// metadata names, is dialled to the test server.
func FuzzNPMMetadata(f *testing.F) {
	tgz := makeTgz(f,
		tarEntry{name: "package/package.json", body: `{"name":"pkg","version":"1.0.0"}`},
		tarEntry{name: "package/.claude-plugin/plugin.json", body: `{"name":"pkg"}`},
	)
	var meta atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pkg" {
			w.Write(*meta.Load())
			return
		}
		w.Write(tgz)
	}))
	f.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout: time.Second,
	}}
	fetcher := &Fetcher{Net: netfetch.Config{NPMRegistry: srv.URL, Client: client, Timeout: 5 * time.Second}}

	good := `{"dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"version":"1.0.0","dist":{"tarball":"REG/t/pkg.tgz","integrity":"` + sri512(tgz) + `"}}}}`
	for _, s := range [][2]string{
		{good, ""},
		{good, "latest"},
		{strings.Replace(good, sri512(tgz), "sha1-AAAA sha512-!!!", 1), "1.0.0"},
		{`{"dist-tags":{"latest":"2.0.0"},"versions":{"2.0.0":{"dist":{"tarball":"http://elsewhere.example/x.tgz","shasum":"abc"}}}}`, ""},
		{`{"versions":{"1.0.0":{"dist":{"tarball":"REG/t/pkg.tgz","integrity":"sha512-"}}}}`, "1.0.0"},
		{`{"dist-tags":{"latest":"latest"},"versions":{}}`, ""},
		{`{"versions":{"1.0.0":{"dist":{"tarball":"ftp://x/y"}}}}`, "1.0.0"},
		{`{"versions":{"1.0.0":{"dist":{"tarball":"REG/t/pkg.tgz","shasum":"zz"}}}}`, "1.0.0"},
		{`[]`, "^1.0.0"},
		{`{"dist-tags":null,"versions":null}`, ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, metadata, version string) {
		b := []byte(strings.ReplaceAll(metadata, "REG", srv.URL))
		meta.Store(&b)
		dest := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := fetcher.Fetch(ctx, Request{Plugin: "p@m", Dest: dest,
			Source: plugin.Source{Kind: plugin.SourceNPM, Package: "pkg", Version: version}})
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Layer != plugin.LayerMaterialization || pe.Hint == "" {
				t.Fatalf("not a materialization error with a hint: %T %v", err, err)
			}
			return
		}
		if res.Version == "" {
			t.Fatalf("fetched without a version: %+v", res)
		}
	})
}
