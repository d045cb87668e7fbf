package source

import (
	"context"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/wharfhq/wharf/netidle"
)

// checkHTTPURL allows https anywhere and plain http only to loopback.
func checkHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: URL %q: %v", ErrUnsupported, redactURL(raw), err)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	default:
		return nil, fmt.Errorf("%w: URL %q must be https (http only to 127.0.0.1)", ErrUnsupported, redactURL(raw))
	}
	return u, nil
}

// client returns the HTTP client with a redirect check: every hop must pass
// the same URL rule as the first, so an https URL cannot redirect to plain
// http on another host.
//
// Unless private networks are allowed (see AllowPrivateEnv), the client also
// refuses hosts that are not public, on the first request and on every
// redirect, and dials only addresses it checked.
func (f *Fetcher) client(g *addrGuard) *http.Client {
	c := http.Client{Transport: netidle.Transport()}
	if f.HTTPClient != nil {
		c = *f.HTTPClient
	}
	if !g.off {
		switch t := c.Transport.(type) {
		case nil:
			tr := http.DefaultTransport.(*http.Transport).Clone()
			g.protect(tr)
			c.Transport = tr
		case *http.Transport:
			tr := t.Clone()
			g.protect(tr)
			c.Transport = tr
		}
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return fmt.Errorf("stopped after 10 redirects")
		}
		if _, err := checkHTTPURL(req.URL.String()); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		if err := g.checkURL(req.Context(), req.URL); err != nil {
			return fmt.Errorf("redirect to %s refused: %w", redactURL(req.URL.String()), err)
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &c
}

// get performs one GET under the fetch timeout and returns the open body.
func (f *Fetcher) get(ctx context.Context, raw string, accept string) (*http.Response, context.CancelFunc, error) {
	u, err := checkHTTPURL(raw)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancelStep := context.WithTimeout(ctx, f.timeout())
	ctx, stop := netidle.Watch(ctx, f.idle())
	cancel := func() { stop(); cancelStep() }
	g := f.guard()
	if err := g.checkURL(ctx, u); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("GET %s: %w", redactURL(raw), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := f.client(g).Do(req)
	if err != nil {
		cancel()
		if e := netidle.Cause(ctx); e != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", redactURL(raw), idleErr(e, err))
		}
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("GET %s: timed out after %s: %w", redactURL(raw), f.timeout(), err)
		}
		return nil, nil, fmt.Errorf("GET %s: %w", redactURL(raw), err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusNotFound {
			return nil, nil, fmt.Errorf("%w: GET %s: %s", ErrNotFound, redactURL(raw), resp.Status)
		}
		return nil, nil, fmt.Errorf("GET %s: %s", redactURL(raw), resp.Status)
	}
	resp.Body = idleBody{resp.Body, ctx}
	return resp, cancel, nil
}

// idleBody says, when reading the body fails because the server went
// silent, which host and which limit.
type idleBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		if e := netidle.Cause(b.ctx); e != nil {
			return n, idleErr(e, err)
		}
	}
	return n, err
}

// download streams raw into a temporary file (outside the destination),
// feeding every byte to the hashes, and refuses more than max bytes. The
// caller removes the file.
func (f *Fetcher) download(ctx context.Context, raw string, max int64, hashes ...hash.Hash) (*os.File, error) {
	resp, cancel, err := f.get(ctx, raw, "")
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d", ErrTooLarge, redactURL(raw), resp.ContentLength, max)
	}
	tmp, err := os.CreateTemp("", "wharf-download-*")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	ws := []io.Writer{tmp}
	for _, h := range hashes {
		ws = append(ws, h)
	}
	if f.ProgressBar != nil {
		bar := progressbar.NewOptions64(resp.ContentLength,
			progressbar.OptionSetWriter(f.ProgressBar),
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
		return nil, fmt.Errorf("GET %s: %w", redactURL(raw), err)
	}
	if n > max {
		return nil, fmt.Errorf("%w: %s is more than %d bytes", ErrTooLarge, redactURL(raw), max)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ok = true
	return tmp, nil
}

func removeTemp(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
