package fetch

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/wharfhq/wharf/internal/core/netidle"
)

// Sentinel errors of downloads; callers branch with errors.Is.
var (
	// ErrNotFound: the server answered 404.
	ErrNotFound = errors.New("not found")
	// ErrTooLarge: more bytes than the limit.
	ErrTooLarge = errors.New("too large")
	// ErrUnsupported: a URL wharf does not fetch (plain http off loopback,
	// another scheme).
	ErrUnsupported = errors.New("unsupported source")
	// ErrTimeout: a step ran past Config.Timeout.
	ErrTimeout = errors.New("timed out")
)

// HTTPError is a response other than 200: the status, for the caller's hint
// (401 and 403 ask for credentials).
type HTTPError struct {
	URL    string
	Status string
	Code   int
}

func (e *HTTPError) Error() string { return "GET " + e.URL + ": " + e.Status }

func (e *HTTPError) Is(target error) bool {
	return target == ErrNotFound && e.Code == http.StatusNotFound
}

// CheckHTTPURL allows https anywhere and plain http only to loopback.
func CheckHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: URL %q: %v", ErrUnsupported, Redact(raw), err)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
	case u.Scheme == "http" && u.Host != "" && IsLoopback(u.Hostname()):
	default:
		return nil, fmt.Errorf("%w: URL %q must be https (http only to 127.0.0.1)", ErrUnsupported, Redact(raw))
	}
	return u, nil
}

// Get is one HTTP GET.
type Get struct {
	URL    string
	Accept string
	Header http.Header
	// Trusted skips the private-address refusal: the user named this URL
	// (a marketplace they add), not a marketplace entry.
	Trusted bool
	// ProgressBar is a terminal on which Download draws a byte bar.
	ProgressBar io.Writer
}

// client returns the HTTP client of one request: the base client's
// transport cloned, guarded and proxied as configured, and a redirect check
// by which every hop passes the same URL rule as the first, so an https URL
// cannot redirect to plain http on another host, nor to a private address.
func (c *Config) client(g *Guard) *http.Client {
	hc := http.Client{Transport: netidle.Transport()}
	if c.Client != nil {
		hc = *c.Client
	}
	var tr *http.Transport
	switch t := hc.Transport.(type) {
	case nil:
		tr = netidle.Transport()
	case *http.Transport:
		tr = t.Clone()
	}
	if tr != nil {
		if c.Proxy != "" {
			if pu, err := url.Parse(c.Proxy); err == nil {
				tr.Proxy = http.ProxyURL(pu)
			}
		}
		if len(c.CABundle) > 0 {
			withRoots(tr, c.CABundle)
		}
		g.Protect(tr)
		hc.Transport = tr
	}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return fmt.Errorf("stopped after 10 redirects")
		}
		if _, err := CheckHTTPURL(req.URL.String()); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		if err := g.CheckURL(req.Context(), req.URL); err != nil {
			return fmt.Errorf("redirect to %s refused: %w", Redact(req.URL.String()), err)
		}
		if check := redirectCheckOf(req.Context()); check != nil {
			if err := check(req.Context(), req.URL); err != nil {
				return err
			}
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &hc
}

// Open performs one GET under a Step and returns the response of a 200
// with its body open; close the body when done (that ends the step).
// Other statuses are an *HTTPError (404 is ErrNotFound).
func (c *Config) Open(ctx context.Context, r Get) (*http.Response, error) {
	u, err := CheckHTTPURL(r.URL)
	if err != nil {
		return nil, err
	}
	ctx, stop := c.Step(ctx)
	g := c.Guard()
	if r.Trusted {
		g.Trust(u.Hostname())
	}
	if err := g.CheckURL(ctx, u); err != nil {
		stop()
		return nil, fmt.Errorf("GET %s: %w", Redact(r.URL), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		stop()
		return nil, err
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Accept != "" {
		req.Header.Set("Accept", r.Accept)
	}
	resp, err := c.client(g).Do(req)
	if err != nil {
		stop()
		return nil, fmt.Errorf("GET %s: %w", Redact(r.URL), c.stepErr(ctx, err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		stop()
		return nil, &HTTPError{URL: Redact(r.URL), Status: resp.Status, Code: resp.StatusCode}
	}
	resp.Body = &stepBody{ReadCloser: resp.Body, ctx: ctx, stop: stop, c: c}
	return resp, nil
}

// stepErr names the cause of a failed step: the silent host and the idle
// limit (a *netidle.Error), or the overall timeout.
func (c *Config) stepErr(ctx context.Context, err error) error {
	if e := netidle.Cause(ctx); e != nil {
		return IdleError(e, err)
	}
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%w after %s (git-timeout; raise WHARF_GIT_TIMEOUT if the network is slow): %v", ErrTimeout, c.StepTimeout(), err)
	}
	return err
}

// IdleError is the error of a step whose server went silent: it wraps e
// (errors.As finds the *netidle.Error: host and limit) and names the setting.
func IdleError(e *netidle.Error, err error) error {
	const setting = "net-idle-timeout; raise WHARF_NET_IDLE_TIMEOUT if the server is only slow"
	if err == nil || strings.Contains(err.Error(), e.Error()) {
		// The transport already reported the cause; say it once.
		return fmt.Errorf("%w (%s)", e, setting)
	}
	return fmt.Errorf("%w (%s): %v", e, setting, err)
}

// stepBody ends the step when closed and says, when reading fails because
// the server went silent, which host and which limit.
type stepBody struct {
	io.ReadCloser
	ctx  context.Context
	stop context.CancelFunc
	c    *Config
}

func (b *stepBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.c.stepErr(b.ctx, err)
	}
	return n, err
}

func (b *stepBody) Close() error {
	err := b.ReadCloser.Close()
	b.stop()
	return err
}

// ReadAll GETs r.URL and returns its body, refusing more than max bytes
// (zero: MaxMetadata).
func (c *Config) ReadAll(ctx context.Context, r Get, max int64) ([]byte, error) {
	if max <= 0 {
		max = c.MaxMetadata()
	}
	resp, err := c.Open(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d", ErrTooLarge, Redact(r.URL), resp.ContentLength, max)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", Redact(r.URL), err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s is more than %d bytes", ErrTooLarge, Redact(r.URL), max)
	}
	return data, nil
}

// Download streams r.URL into a temporary file (outside any destination),
// feeding every byte to the hashes, and refuses more than max bytes (zero:
// MaxDownload). The caller closes and removes the file (RemoveTemp).
func (c *Config) Download(ctx context.Context, r Get, max int64, hashes ...hash.Hash) (*os.File, error) {
	if max <= 0 || max > c.MaxDownload() {
		max = c.MaxDownload()
	}
	resp, err := c.Open(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d", ErrTooLarge, Redact(r.URL), resp.ContentLength, max)
	}
	tmp, err := os.CreateTemp("", "wharf-download-*")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			RemoveTemp(tmp)
		}
	}()
	ws := []io.Writer{tmp}
	for _, h := range hashes {
		ws = append(ws, h)
	}
	if r.ProgressBar != nil {
		bar := progressbar.NewOptions64(resp.ContentLength,
			progressbar.OptionSetWriter(r.ProgressBar),
			progressbar.OptionSetDescription("downloading "+path.Base(resp.Request.URL.Path)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSpinnerType(14))
		defer bar.Exit()
		ws = append(ws, bar)
	}
	n, err := io.Copy(io.MultiWriter(ws...), io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", Redact(r.URL), err)
	}
	if n > max {
		return nil, fmt.Errorf("%w: %s is more than %d bytes", ErrTooLarge, Redact(r.URL), max)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ok = true
	return tmp, nil
}

// RemoveTemp closes and removes a file Download returned.
func RemoveTemp(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
