package netidle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

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

func TestBarShowsGitPhaseAndBytes(t *testing.T) {
	var term bytes.Buffer
	b := newBar(&term, "fetching ssh://host/x.git", 0)
	b.Write([]byte("Enumerating objects: 5, done.\nCounting objects:  20% (1/5)\rCounting obj"))
	b.Write([]byte("ects: 100% (5/5), done.\nCompressing objects:  45% (123/270)\r"))
	b.bar.Add(64 << 10)
	out := term.String()
	for _, want := range []string{"fetching ssh://host/x.git: compressing objects 45% (123/270) (66 kB"} {
		if !strings.Contains(out, want) {
			t.Errorf("bar %q does not show %q", out, want)
		}
	}
	if strings.Contains(out, "Counting objects:") {
		t.Errorf("raw git progress copied to the terminal: %q", out)
	}
	b.Finish()
}

// Bytes read by the step's connections move the bar.
func TestBarCountsTheStepsBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 200<<10))
	}))
	defer srv.Close()
	ctx, stop := Watch(context.Background(), time.Minute)
	defer stop()
	var term bytes.Buffer
	b := NewBar(&term, "fetching")
	b.Track(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: Transport()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := b.bar.State().CurrentBytes; got < 200<<10 {
		t.Errorf("bar counted %.0f bytes, want at least %d", got, 200<<10)
	}
}

// lockedBuffer is a terminal the bar's spinner goroutine may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Clear and Finish blank the widest line the bar drew, while its spinner
// goroutine and the byte counter keep drawing (run under -race), and after
// Finish nothing more reaches the terminal.
func TestBarClearsWhatItDrew(t *testing.T) {
	var term lockedBuffer
	b := newBar(&term, "fetching ssh://host/x.git", 0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				b.bar.Add(512)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		b.Clear()
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	<-done
	b.Finish()
	out := term.String()
	// The terminal ends with the last line drawn, then blanks as wide as
	// it between carriage returns: nothing of the bar stays on screen.
	lines := strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' })
	if len(lines) < 2 || !strings.HasSuffix(out, "\r") {
		t.Fatalf("the bar was not drawn and cleared: %q", out)
	}
	blank, drawn := lines[len(lines)-1], lines[len(lines)-2]
	if strings.Trim(blank, " ") != "" || !strings.HasSuffix(out, "\r"+blank+"\r") ||
		!strings.Contains(drawn, "fetching ssh://host/x.git") || utf8.RuneCountInString(blank) < utf8.RuneCountInString(drawn) {
		t.Fatalf("the last line drawn %q is not blanked (%d spaces): %q", drawn, len(blank), out[max(0, len(out)-300):])
	}
	b.bar.Add(1 << 20)
	if term.String() != out {
		t.Fatal("the bar drew after Finish")
	}
	b.Finish() // again: nothing
}
