package progress

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wharfhq/wharf/internal/core/netidle"
)

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
	ctx, stop := netidle.Watch(context.Background(), time.Minute)
	defer stop()
	var term bytes.Buffer
	b := NewBar(&term, "fetching")
	netidle.OnRead(ctx, b.Add)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: netidle.Transport()}).Do(req)
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

// A bar leaves no goroutine behind: a clone draws one per fetch, and a
// long session fetches many times.
func TestBarLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		b := NewBar(io.Discard, "fetching x")
		b.Add(10)
		b.Write([]byte("Counting objects:  20% (1/5)\r"))
		b.Finish()
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left after 20 finished bars (%d before)", n, before)
	}
}
