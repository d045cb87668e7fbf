package source

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

// The package's tests serve archives, registries and repositories on
// 127.0.0.1: they run with private sources allowed, as a user would set it
// for a local mirror. The tests of the refusal clear the switch.
func TestMain(m *testing.M) {
	os.Setenv(AllowPrivateEnv, "1")
	os.Exit(m.Run())
}

func refusePrivate(t *testing.T) {
	t.Setenv(AllowPrivateEnv, "")
}

// counting serves body at every path and counts requests.
func counting(t *testing.T, body []byte) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func wantPrivateRefusal(t *testing.T, err error) {
	t.Helper()
	wantSourceErr(t, err, ErrPrivateAddress)
	if !strings.Contains(err.Error(), AllowPrivateEnv+"=1") {
		t.Errorf("error does not name the setting: %v", err)
	}
}

// An archive on loopback is refused before any request, with an error that
// names the setting; with the setting the same fetch works.
func TestArchiveLoopbackRefused(t *testing.T) {
	zipBody := makeZip(t, zipEntry{name: ".claude-plugin/plugin.json", body: `{"name":"z"}`, mode: 0o644})
	srv, n := counting(t, zipBody)
	refusePrivate(t)
	for _, u := range []string{srv.URL + "/p.zip", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/p.zip"} {
		_, dest := sandbox(t)
		_, err := fetchTo(t, &Fetcher{}, plugin.Source{Kind: plugin.SourceArchive, URL: u}, dest)
		wantPrivateRefusal(t, err)
	}
	if n.Load() != 0 {
		t.Fatalf("the server got %d requests; a refused source must not be contacted", n.Load())
	}
	_, dest := sandbox(t)
	if _, err := fetchTo(t, &Fetcher{Net: netfetch.Config{AllowPrivate: true}}, plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/p.zip"}, dest); err != nil {
		t.Fatalf("with private networks allowed: %v", err)
	}
	t.Setenv(AllowPrivateEnv, "1")
	_, dest = sandbox(t)
	if _, err := fetchTo(t, &Fetcher{}, plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/p.zip"}, dest); err != nil {
		t.Fatalf("with %s=1: %v", AllowPrivateEnv, err)
	}
}

// The configured npm registry is trusted even on a private address, but a
// tarball it names on another (loopback) host is not; an npm source that
// names its own loopback registry is refused.
func TestNPMPrivateHosts(t *testing.T) {
	tgz := makeTgz(t, tarEntry{name: "package/package.json", body: `{"name":"x","version":"1.0.0"}`})
	var srv *httptest.Server
	var tarballs atomic.Int64
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tgz") {
			tarballs.Add(1)
			w.Write(tgz)
			return
		}
		local := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
		w.Write([]byte(`{"dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"version":"1.0.0","dist":{"tarball":"` + local + `/x.tgz"}}}}`))
	}))
	t.Cleanup(srv.Close)
	refusePrivate(t)
	_, dest := sandbox(t)
	_, err := fetchTo(t, &Fetcher{Net: netfetch.Config{NPMRegistry: srv.URL}}, plugin.Source{Kind: plugin.SourceNPM, Package: "x"}, dest)
	wantPrivateRefusal(t, err)
	if tarballs.Load() != 0 {
		t.Fatalf("the loopback tarball was fetched")
	}
	_, dest = sandbox(t)
	_, err = fetchTo(t, &Fetcher{Net: netfetch.Config{NPMRegistry: "https://registry.npmjs.org"}}, plugin.Source{Kind: plugin.SourceNPM, Package: "x", Registry: srv.URL}, dest)
	wantPrivateRefusal(t, err)
}

// A git URL written by a marketplace entry must be on a public host.
func TestGitURLPrivateRefused(t *testing.T) {
	refusePrivate(t)
	for _, u := range []string{"https://127.0.0.1:1/x.git", "https://10.1.2.3/x.git", "git@192.168.1.1:x/y.git", "ssh://git@[::1]/x"} {
		_, dest := sandbox(t)
		_, err := fetchTo(t, &Fetcher{}, plugin.Source{Kind: plugin.SourceURL, URL: u}, dest)
		wantPrivateRefusal(t, err)
	}
}
