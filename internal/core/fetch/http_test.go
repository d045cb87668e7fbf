package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/netidle"
	"github.com/wharfhq/wharf/internal/testutil/silentnet"
)

func allowLoopback(t *testing.T) { t.Setenv(AllowPrivateEnv, "1") }

func TestReadAllStatusAndSize(t *testing.T) {
	allowLoopback(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/private":
			http.Error(w, "no", http.StatusUnauthorized)
		default:
			w.Write([]byte(strings.Repeat("x", 100)))
		}
	}))
	defer srv.Close()
	c := &Config{}
	ctx := context.Background()

	_, err := c.ReadAll(ctx, Get{URL: srv.URL + "/missing"}, 0)
	var he *HTTPError
	if !errors.As(err, &he) || he.Code != 404 || !errors.Is(err, ErrNotFound) {
		t.Errorf("404: %v, want an *HTTPError that is ErrNotFound", err)
	}
	_, err = c.ReadAll(ctx, Get{URL: srv.URL + "/private"}, 0)
	if !errors.As(err, &he) || he.Code != 401 || errors.Is(err, ErrNotFound) {
		t.Errorf("401: %v, want an *HTTPError with code 401", err)
	}
	if _, err := c.ReadAll(ctx, Get{URL: srv.URL + "/big"}, 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("100 bytes with a limit of 99: %v, want ErrTooLarge", err)
	}
	if b, err := c.ReadAll(ctx, Get{URL: srv.URL + "/big"}, 100); err != nil || len(b) != 100 {
		t.Errorf("100 bytes with a limit of 100: %d bytes, %v", len(b), err)
	}
	small := &Config{MaxDownloadBytes: 10}
	if f, err := small.Download(ctx, Get{URL: srv.URL + "/big"}, 0); !errors.Is(err, ErrTooLarge) {
		if f != nil {
			RemoveTemp(f)
		}
		t.Errorf("download above max-download-bytes: %v, want ErrTooLarge", err)
	}
	for _, u := range []string{"http://example.com/x", "ftp://example.com/x", "file:///etc/passwd"} {
		if _, err := c.ReadAll(ctx, Get{URL: u}, 0); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", u, err)
		}
	}
}

// A user-named URL (a marketplace the user adds) may be on loopback; a
// URL a marketplace entry names may not, unless allowed.
func TestLoopbackRefusedUnlessTrusted(t *testing.T) {
	t.Setenv(AllowPrivateEnv, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }))
	defer srv.Close()
	c := &Config{}
	if _, err := c.ReadAll(context.Background(), Get{URL: srv.URL}, 0); !errors.Is(err, ErrPrivateAddress) || !strings.Contains(err.Error(), AllowPrivateEnv+"=1") {
		t.Errorf("loopback GET: %v, want ErrPrivateAddress naming %s", err, AllowPrivateEnv)
	}
	if _, err := c.ReadAll(context.Background(), Get{URL: srv.URL, Trusted: true}, 0); err != nil {
		t.Errorf("trusted loopback GET: %v", err)
	}
	if _, err := (&Config{AllowPrivate: true}).ReadAll(context.Background(), Get{URL: srv.URL}, 0); err != nil {
		t.Errorf("GET with AllowPrivate: %v", err)
	}
}

// A redirect to plain http on another host is refused.
func TestRedirectToPlainHTTPRefused(t *testing.T) {
	allowLoopback(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com/x", http.StatusFound)
	}))
	defer srv.Close()
	c := &Config{Client: srv.Client()}
	if _, err := c.ReadAll(context.Background(), Get{URL: srv.URL}, 0); err == nil || !strings.Contains(err.Error(), "redirect refused") {
		t.Errorf("redirect to http://example.com: %v", err)
	}
}

// A silent server fails the step after the configured limits, and the
// error says which.
func TestStepLimitsNameTheSetting(t *testing.T) {
	allowLoopback(t)
	addr := silentnet.Listen(t)
	c := &Config{Timeout: time.Hour, IdleTimeout: 200 * time.Millisecond}
	_, err := c.ReadAll(context.Background(), Get{URL: "http://" + addr + "/x"}, 0)
	var ie *netidle.Error
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "net-idle-timeout") {
		t.Errorf("idle: %v, want a *netidle.Error naming net-idle-timeout", err)
	}
	c = &Config{Timeout: 300 * time.Millisecond, IdleTimeout: -1}
	_, err = c.ReadAll(context.Background(), Get{URL: "http://" + addr + "/x"}, 0)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "after 300ms (git-timeout") {
		t.Errorf("timeout: %v, want ErrTimeout naming 300ms and git-timeout", err)
	}
}

func TestFromEnvAndCheck(t *testing.T) {
	c, err := FromEnv(envOf("WHARF_GITHUB_HOST", "ghe.corp.example", "WHARF_GIT_TIMEOUT", "90", "WHARF_NET_IDLE_TIMEOUT", "2s",
		"WHARF_NPM_REGISTRY", "https://npm.corp.example", "WHARF_PROXY", "http://proxy.corp.example:3128"))
	if err != nil {
		t.Fatal(err)
	}
	if c.StepTimeout() != 90*time.Second || c.Idle() != 2*time.Second || c.GitHubURL("o/r") != "https://ghe.corp.example/o/r.git" ||
		c.NPMRegistry != "https://npm.corp.example" || c.Proxy != "http://proxy.corp.example:3128" {
		t.Errorf("FromEnv = %+v", c)
	}
	for _, bad := range [][]string{
		{"WHARF_GIT_TIMEOUT", "forever"}, {"WHARF_GIT_TIMEOUT", "0"}, {"WHARF_GIT_TIMEOUT", "-1s"},
		{"WHARF_NET_IDLE_TIMEOUT", "soon"},
		{"WHARF_GITHUB_HOST", "ghe.corp.example/path"}, {"WHARF_GITHUB_HOST", "ftp://ghe.corp.example"},
		{"WHARF_GITHUB_HOST", "https://user:pw@ghe.corp.example"}, {"WHARF_GITLAB_HOST", "a b"},
		{"WHARF_PROXY", "proxy.corp.example"},
	} {
		if _, err := FromEnv(envOf(bad...)); err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(strings.TrimPrefix(strings.ReplaceAll(bad[0], "_", "-"), "WHARF-"))) &&
			!strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s=%q: %v, want an error naming the setting", bad[0], bad[1], err)
		}
	}
	for in, want := range map[string]string{
		"":                              "https://github.com/o/r.git",
		"127.0.0.1:8080":                "http://127.0.0.1:8080/o/r.git",
		"https://ghe.corp.example:8443": "https://ghe.corp.example:8443/o/r.git",
		"GHE.corp.example/":             "https://GHE.corp.example/o/r.git",
	} {
		c := &Config{GitHubHost: in}
		if got := c.GitHubURL("o/r"); got != want {
			t.Errorf("GitHubURL with host %q = %s, want %s", in, got, want)
		}
	}
}

// The configured proxy carries downloads.
func TestProxyCarriesDownloads(t *testing.T) {
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.String())
		w.Write([]byte("via proxy"))
	}))
	defer proxy.Close()
	c := &Config{Proxy: proxy.URL, AllowPrivate: true}
	b, err := c.ReadAll(context.Background(), Get{URL: "http://127.0.0.1:1/catalog.json"}, 0)
	if err != nil || string(b) != "via proxy" || len(seen) != 1 || seen[0] != "http://127.0.0.1:1/catalog.json" {
		t.Fatalf("GET through proxy %s: %q, %v; proxy saw %v", proxy.URL, b, err, seen)
	}
}
