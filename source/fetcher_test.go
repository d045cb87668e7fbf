package source

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"90": 90 * time.Second, "2m": 2 * time.Minute, "1500ms": 1500 * time.Millisecond} {
		if got, err := parseTimeout(in); err != nil || got != want {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-5", "soon", "-1s"} {
		if _, err := parseTimeout(in); err == nil {
			t.Errorf("parseTimeout(%q) accepted", in)
		}
	}
	t.Setenv("WHARF_GIT_TIMEOUT", "forever")
	if _, err := NewFetcher(); err == nil || !strings.Contains(err.Error(), "WHARF_GIT_TIMEOUT") {
		t.Errorf("NewFetcher with a bad WHARF_GIT_TIMEOUT: %v", err)
	}
	t.Setenv("WHARF_GIT_TIMEOUT", "30")
	t.Setenv("WHARF_NPM_REGISTRY", "http://127.0.0.1:1/npm")
	f, err := NewFetcher()
	if err != nil || f.Timeout != 30*time.Second || f.NPMRegistry != "http://127.0.0.1:1/npm" {
		t.Errorf("NewFetcher = %+v, %v", f, err)
	}
}

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
	f := &Fetcher{Timeout: 50 * time.Millisecond}
	parent, dest := sandbox(t)
	_, err := fetch(t, f, plugin.Source{Kind: plugin.SourceArchive, URL: srv.URL + "/slow.zip"}, dest)
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
	_, err := fetch(t, &Fetcher{}, plugin.Source{Kind: "svn"}, dest)
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
