package source

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	f := &Fetcher{Net: netfetch.Config{Timeout: 50 * time.Millisecond}}
	parent, dest := sandbox(t)
	_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/slow.zip"}, dest)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want a timeout naming the URL", err)
	}
	assertOnlyDest(t, parent)
}

func TestProgressAndUnknownKind(t *testing.T) {
	var buf bytes.Buffer
	mkt := t.TempDir()
	writeFile(t, mkt+"/p/a.md", "a", 0o644)
	f := &Fetcher{Progress: &buf}
	_, dest := sandbox(t)
	if _, err := f.Fetch(context.Background(), Request{Plugin: "p@m", Source: plugin.Source{Kind: plugin.SourceRelative, Path: "./p"}, MarketplaceDir: mkt, Dest: dest}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "p@m: copying ./p") || !strings.Contains(buf.String(), "1 entries") {
		t.Errorf("progress = %q", buf.String())
	}
	_, dest = sandbox(t)
	_, err := fetchTo(t, &Fetcher{}, plugin.Source{Kind: "svn"}, dest)
	wantSourceErr(t, err, ErrUnsupported)
}

func TestDownloadDrawsABarOnlyWhenAsked(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	var bar bytes.Buffer
	f := &Fetcher{ProgressBar: &bar}
	tmp, err := f.download(context.Background(), srv.URL+"/p.zip", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	removeTemp(tmp)
	if !strings.Contains(bar.String(), "downloading p.zip") {
		t.Fatalf("no download bar drawn: %q", bar.String())
	}
	f = &Fetcher{}
	tmp, err = f.download(context.Background(), srv.URL+"/p.zip", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	removeTemp(tmp)
}
