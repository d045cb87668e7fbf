//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// slowServer answers every request with headers and then one byte every
// tick for a long while (so no idle limit ends it): a download or git fetch
// that would take minutes. started is closed at the first request;
// finished reports whether any answer ran to its end.
func slowServer(t *testing.T) (url string, started <-chan struct{}, finished *atomic.Bool) {
	t.Helper()
	st := make(chan struct{})
	var once atomic.Bool
	fin := &atomic.Bool{}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if once.CompareAndSwap(false, true) {
			close(st)
		}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for range 300 { // a minute
			select {
			case <-done:
				return
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := w.Write([]byte{'0'}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
		fin.Store(true)
	}))
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return srv.URL, st, fin
}

// homeState is what an interrupted command must leave as it was: every
// file of the home with its content (the state.db, settings, the cache's
// version directories), without temporary directories.
func homeState(t *testing.T, home string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, p)
		switch {
		case rel == "policy-decisions.memo" || rel == "machine-id" || strings.HasPrefix(rel, "agent") || rel == ".lock" || strings.HasSuffix(rel, "/.lock"):
			return nil // caches of speed and lock files, not state
		case fi.IsDir():
			lines = append(lines, rel+"/")
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if rel == "state.db" {
				lines = append(lines, rel+" "+boltDump(t, p))
				return nil
			}
			lines = append(lines, rel+" "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestInstallInterrupted: Ctrl-C during the network step of an install (an
// archive download, a git fetch) or of a marketplace add ends it promptly
// (well before the slow server would have finished), with exit 130 and
// "interrupted", and leaves the home as it was.
func TestInstallInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, kind := range []string{"archive", "git", "marketplace"} {
		t.Run(kind, func(t *testing.T) {
			url, started, finished := slowServer(t)
			w := newWharfRun(t)
			w.env = append(w.env, "WHARF_ALLOW_PRIVATE_SOURCES=1", "WHARF_NET_IDLE_TIMEOUT=600s", "WHARF_GIT_TIMEOUT=600s")
			src := `{"source": "archive", "url": "` + url + `/slow.zip"}`
			if kind == "git" {
				src = `{"source": "url", "url": "` + url + `/slow.git"}`
			}
			mkt := testworld.Marketplace(t, t.TempDir(), "m", map[string]map[string]string{
				"a": {".claude-plugin/plugin.json": testworld.Manifest("a", "1.0.0"), "commands/go.md": "go\n"},
			})
			writeFile(t, filepath.Join(mkt, ".claude-plugin", "marketplace.json"), `{"name": "m", "owner": {"name": "t"}, "plugins": [
				{"name": "a", "source": "./plugins/a"},
				{"name": "slow", "source": `+src+`}]}`)
			w.ok("marketplace", "add", mkt)
			w.ok("install", "a@m")
			before := homeState(t, w.home)

			c := w.cmd("install", "slow@m")
			if kind == "marketplace" {
				c = w.cmd("marketplace", "add", url+"/tools.git")
			}
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- c.Wait() }()
			select {
			case <-started:
			case err := <-exited:
				t.Fatalf("install ended before reaching the server: %v\n%s%s", err, stdout.String(), stderr.String())
			case <-time.After(2 * time.Minute):
				c.Process.Kill()
				t.Fatal("install never reached the server")
			}
			if err := c.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(2 * time.Minute):
				c.Process.Kill()
				<-exited
				t.Fatalf("install still running long after Ctrl-C\n%s%s", stdout.String(), stderr.String())
			}
			if finished.Load() {
				t.Fatalf("install ran until the slow server finished instead of stopping at Ctrl-C")
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want 130\n%s%s", err, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Fatalf("stderr does not say interrupted:\n%s", stderr.String())
			}
			if after := homeState(t, w.home); after != before {
				t.Fatalf("the interrupted install changed the home:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			w.ok("install", "a@m")
		})
	}
}

// boltDump lists every bucket, key and value of a bbolt file.
func boltDump(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "%s/%s=%q\n", name, k, v)
				return nil
			})
		})
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
