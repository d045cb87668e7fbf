package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/netidle"
)

// Defaults used when a Config field is zero.
const (
	DefaultGitHubHost  = "github.com"
	DefaultGitLabHost  = "gitlab.com"
	DefaultTimeout     = 120 * time.Second
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxDownloadBytes bounds one downloaded file (an archive or an
	// npm tarball).
	DefaultMaxDownloadBytes = 256 << 20
	// DefaultMaxMetadataBytes bounds a JSON document (npm registry
	// metadata, a marketplace.json fetched by URL).
	DefaultMaxMetadataBytes = 64 << 20
)

// Config is what every fetch obeys. The zero value is usable (public hosts,
// default limits, tokens from the process environment). Build it once per
// command and pass it to every fetch; do not change it while fetches run.
type Config struct {
	// GitHubHost is where {"source":"github"} and owner/repo point:
	// "host[:port]" (https; plain http only for a loopback stand-in) or a
	// base URL such as "https://ghe.corp.example:8443". "" is github.com.
	GitHubHost string
	// GitLabHost is the self-hosted GitLab that GITLAB_TOKEN is for, in
	// the same forms; "" is gitlab.com only.
	GitLabHost string
	// Timeout bounds each network step (zero: DefaultTimeout).
	Timeout time.Duration
	// IdleTimeout fails a network step whose connections move no byte for
	// this long (zero: DefaultIdleTimeout; negative: no idle limit).
	IdleTimeout time.Duration
	// Proxy is the URL of the HTTP(S) proxy for git over https and for
	// downloads; "" uses HTTPS_PROXY / HTTP_PROXY / NO_PROXY. ssh goes
	// through ALL_PROXY when that is set.
	Proxy string
	// MaxDownloadBytes bounds one downloaded file (zero: the default).
	MaxDownloadBytes int64
	// MaxMetadataBytes bounds one JSON document (zero: the default).
	MaxMetadataBytes int64
	// NPMRegistry is the registry of npm sources that name none (""
	// is https://registry.npmjs.org).
	NPMRegistry string
	// AllowPrivate lets fetches named by a marketplace entry reach
	// loopback, link-local and private addresses; AllowPrivateEnv=1 in the
	// process environment does the same.
	AllowPrivate bool
	// AllowFileURLs permits file:// git URLs in marketplace entries.
	AllowFileURLs bool
	// CABundle is extra PEM roots trusted for https (a GitHub Enterprise
	// behind an internal CA); nil trusts the system roots only.
	CABundle []byte
	// Getenv reads the token variables (GITHUB_TOKEN, GH_TOKEN,
	// GITLAB_TOKEN); nil is os.Getenv.
	Getenv func(string) string
	// Client is the base HTTP client of downloads (its transport is
	// cloned and guarded); nil is a client on netidle's transport.
	Client *http.Client
}

// FromEnv returns the Config the environment alone describes:
// WHARF_GITHUB_HOST, WHARF_GITLAB_HOST, WHARF_GIT_TIMEOUT,
// WHARF_NET_IDLE_TIMEOUT, WHARF_PROXY, WHARF_NPM_REGISTRY,
// WHARF_ALLOW_FILE_SOURCES. Commands build theirs from the config file too;
// this is for library callers that have none.
func FromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Config{
		GitHubHost:    strings.TrimSpace(getenv("WHARF_GITHUB_HOST")),
		GitLabHost:    strings.TrimSpace(getenv("WHARF_GITLAB_HOST")),
		Proxy:         strings.TrimSpace(getenv("WHARF_PROXY")),
		NPMRegistry:   strings.TrimSpace(getenv("WHARF_NPM_REGISTRY")),
		AllowFileURLs: getenv("WHARF_ALLOW_FILE_SOURCES") == "1",
		Getenv:        getenv,
	}
	var err error
	if v := getenv("WHARF_GIT_TIMEOUT"); v != "" {
		if c.Timeout, err = ParseDuration("WHARF_GIT_TIMEOUT", v); err != nil {
			return Config{}, err
		}
	}
	if v := getenv("WHARF_NET_IDLE_TIMEOUT"); v != "" {
		if c.IdleTimeout, err = ParseDuration("WHARF_NET_IDLE_TIMEOUT", v); err != nil {
			return Config{}, err
		}
	}
	return c, c.Check()
}

// ParseDuration reads a positive duration: a Go duration such as "90s", or
// a number of seconds. name is the setting, for the error.
func ParseDuration(name, v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("%s=%q must be positive", name, v)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration (e.g. \"120s\", or a number of seconds)", name, v)
	}
	return d, nil
}

// Check reports a setting that cannot work: a host or proxy that does not
// parse.
func (c *Config) Check() error {
	for _, h := range []struct{ name, v string }{{"github-host", c.GitHubHost}, {"gitlab-host", c.GitLabHost}} {
		if h.v == "" {
			continue
		}
		if _, err := baseURL(h.v); err != nil {
			return fmt.Errorf("%s %q: %w", h.name, h.v, err)
		}
	}
	if c.Proxy != "" {
		u, err := url.Parse(c.Proxy)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
			return fmt.Errorf("proxy %q is not an http://, https:// or socks5:// URL", c.Proxy)
		}
	}
	return nil
}

// baseURL reads a host setting: "host[:port]" or a URL.
func baseURL(v string) (*url.URL, error) {
	v = strings.TrimRight(strings.TrimSpace(v), "/")
	if !strings.Contains(v, "://") {
		u, err := url.Parse("https://" + v)
		if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
			return nil, fmt.Errorf("want a host such as ghe.corp.example or a URL such as https://ghe.corp.example")
		}
		if IsLoopback(u.Hostname()) {
			u.Scheme = "http" // a local stand-in (tests, a mirror on this machine)
		}
		return u, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Host == "" && u.Scheme != "file") || u.User != nil {
		return nil, fmt.Errorf("want a host such as ghe.corp.example or a URL such as https://ghe.corp.example")
	}
	switch u.Scheme {
	case "https", "http", "file":
	default:
		return nil, fmt.Errorf("scheme %q (want https)", u.Scheme)
	}
	return u, nil
}

// GitHubBase is the base URL of the GitHub host, e.g. "https://github.com".
func (c *Config) GitHubBase() string {
	if c.GitHubHost != "" {
		if u, err := baseURL(c.GitHubHost); err == nil {
			return u.String()
		}
	}
	return "https://" + DefaultGitHubHost
}

// GitHubURL is the clone URL of owner/repo on the GitHub host.
func (c *Config) GitHubURL(repo string) string {
	return strings.TrimRight(c.GitHubBase(), "/") + "/" + strings.TrimSuffix(repo, ".git") + ".git"
}

// githubAuthority is the configured GitHub host as host[:port], lower case.
func (c *Config) githubAuthority() string {
	return authorityOf(c.GitHubHost, DefaultGitHubHost)
}

func (c *Config) gitlabAuthority() string {
	return authorityOf(c.GitLabHost, DefaultGitLabHost)
}

func authorityOf(setting, def string) string {
	if setting == "" {
		return def
	}
	u, err := baseURL(setting)
	if err != nil {
		return def
	}
	return strings.ToLower(u.Host)
}

// Step returns the context of one network step: the overall timeout and
// the idle limit. Call stop when the step is over.
func (c *Config) Step(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, c.StepTimeout())
	ctx, stop := netidle.Watch(ctx, c.Idle())
	return ctx, func() { stop(); cancel() }
}

// StepTimeout is the overall limit of one network step.
func (c *Config) StepTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// Idle is the idle limit of a network step (negative: none).
func (c *Config) Idle() time.Duration {
	if c.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return c.IdleTimeout
}

// MaxDownload is the size limit of one downloaded file.
func (c *Config) MaxDownload() int64 {
	if c.MaxDownloadBytes > 0 {
		return c.MaxDownloadBytes
	}
	return DefaultMaxDownloadBytes
}

// MaxMetadata is the size limit of one JSON document.
func (c *Config) MaxMetadata() int64 {
	if c.MaxMetadataBytes > 0 {
		return c.MaxMetadataBytes
	}
	return DefaultMaxMetadataBytes
}

func (c *Config) getenv(k string) string {
	if c.Getenv != nil {
		return c.Getenv(k)
	}
	return os.Getenv(k)
}

// Redact drops user info (a token) from a URL, for messages.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || u.Scheme == "" {
		return raw
	}
	u.User = nil
	return u.String()
}
