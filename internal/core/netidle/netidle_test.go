package netidle

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/wharfhq/wharf/internal/testutil/silentnet"
)

func TestSilentServerFailsWithIdleError(t *testing.T) {
	addr := silentnet.Listen(t)
	// The overall deadline is far away: only the idle limit can end this.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ctx, stop := Watch(ctx, 200*time.Millisecond)
	defer stop()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/x", nil)
	_, err := (&http.Client{Transport: Transport()}).Do(req)
	if err == nil {
		t.Fatal("request to a silent server succeeded")
	}
	e := Cause(ctx)
	if e == nil || e.Host != addr || e.Idle != 200*time.Millisecond {
		t.Fatalf("Cause = %v, want an idle error naming %s; request error: %v", e, addr, err)
	}
}

func TestStallAfterHeadersFailsTheBodyRead(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, stop := Watch(context.Background(), 200*time.Millisecond)
	defer stop()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: Transport()}).Do(req)
	if err != nil {
		t.Fatalf("headers: %v", err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	if err == nil {
		t.Fatal("reading a stalled body succeeded")
	}
	if e := Cause(ctx); e == nil || e.Host != srv.Listener.Addr().String() {
		t.Fatalf("Cause = %v, want an idle error naming the server; read error: %v", e, err)
	}
}

func TestActiveTransferIsNotIdle(t *testing.T) {
	// A transfer that moves bytes completes and leaves no idle cause.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 5; i++ {
			w.Write([]byte("chunk"))
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	ctx, stop := Watch(context.Background(), time.Minute)
	defer stop()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: Transport()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "chunkchunkchunkchunkchunk" {
		t.Fatalf("body %q, %v", b, err)
	}
	if Cause(ctx) != nil {
		t.Fatalf("an active transfer was cancelled: %v", Cause(ctx))
	}
}

func TestNoWatchNoLimit(t *testing.T) {
	ctx, stop := Watch(context.Background(), 0)
	defer stop()
	if Cause(ctx) != nil {
		t.Fatal("a disabled watch has a cause")
	}
	var e *Error
	if errors.As(context.Cause(ctx), &e) {
		t.Fatal("a disabled watch carries an idle error")
	}
}

// A client that dials through golang.org/x/net/proxy (go-git's ssh
// transport) with a ProxyURL and then blocks reading, as an ssh handshake
// does without a context, returns when the idle limit passes.
func TestProxyURLDialsUnderTheWatchAndUnblocksReads(t *testing.T) {
	t.Setenv("ALL_PROXY", "")
	t.Setenv("all_proxy", "")
	addr := silentnet.Listen(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ctx, stop := Watch(ctx, 200*time.Millisecond)
	defer stop()
	u, err := url.Parse(ProxyURL(ctx))
	if err != nil {
		t.Fatal(err)
	}
	d, err := proxy.FromURL(u, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.(proxy.ContextDialer).DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a silent server returned data")
	}
	if e := Cause(ctx); e == nil || e.Host != addr {
		t.Fatalf("Cause = %v, want an idle error naming %s", e, addr)
	}

	stop()
	if _, err := proxy.FromURL(u, proxy.Direct); err == nil {
		t.Error("the proxy URL of a finished step still dials")
	}
	if ProxyURL(context.Background()) != "" {
		t.Error("ProxyURL without a Watch")
	}
}
