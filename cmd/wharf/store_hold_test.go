package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A command that spends its time on other work does not hold wharf's state
// file meanwhile: while an install waits on a stalled download, `wharf
// list` and `wharf marketplace list` answer with a short lock timeout, a
// marketplace update (which would rewrite the clone the install reads)
// waits for it, and the install completes once the download does.
func TestSlowInstallDoesNotLockOutReaders(t *testing.T) {
	var zipBody bytes.Buffer
	zw := zip.NewWriter(&zipBody)
	for name, body := range map[string]string{
		".claude-plugin/plugin.json": `{"name": "slow", "version": "1.0.0"}`,
		"commands/wait.md":           "Wait.\n",
	} {
		f, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	asked, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-release
		w.Write(zipBody.Bytes())
	}))
	defer srv.Close()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	mkt := t.TempDir()
	writeFile(t, filepath.Join(mkt, ".claude-plugin", "marketplace.json"),
		`{"name": "m", "owner": {"name": "t"}, "plugins": [{"name": "slow", "source": {"source": "archive", "url": "`+srv.URL+`/slow.zip"}}]}`)
	w := newWharfRun(t)
	// The archive is served on loopback.
	w.env = append(w.env, "WHARF_ALLOW_PRIVATE_SOURCES=1")
	w.ok("marketplace", "add", mkt)

	install := w.cmd("install", "slow@m")
	var out bytes.Buffer
	install.Stdout, install.Stderr = &out, &out
	if err := install.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		install.Process.Kill()
		t.Fatalf("the install never asked for the archive:\n%s", out.String())
	}
	// The install is now waiting on the download. Readers with a 2 s lock
	// timeout must not wait for it.
	w.env = append(w.env, "WHARF_LOCK_TIMEOUT=2s")
	if got := w.ok("list", "--json"); strings.TrimSpace(got) != "[]" {
		t.Fatalf("list during the install: %s", got)
	}
	if got := w.ok("marketplace", "list", "--json"); !strings.Contains(got, `"m"`) {
		t.Fatalf("marketplace list during the install: %s", got)
	}
	// A marketplace update would rewrite the clone the install copies
	// from: it waits for the install, here past its 2 s lock timeout.
	upd := w.cmd("marketplace", "update", "m")
	if out, err := upd.CombinedOutput(); err == nil || !strings.Contains(string(out), "held by another wharf process") {
		t.Fatalf("marketplace update during the install: %v\n%s", err, out)
	}
	close(release)
	released = true
	if err := install.Wait(); err != nil {
		t.Fatalf("install: %v\n%s", err, out.String())
	}
	var rows []listRow
	if err := json.Unmarshal([]byte(w.ok("list", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != "slow@m" || rows[0].Status != "active" {
		t.Fatalf("after the install: %+v", rows)
	}
	w.ok("marketplace", "update", "m")
}

// Two processes adding the same marketplace name from different git
// repositories at once: one wins, the other is refused with the conflict,
// and the clone on disk is the winner's.
func TestConcurrentMarketplaceAddsOfOneName(t *testing.T) {
	repo := func(desc string) string {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ".claude-plugin", "marketplace.json"),
			`{"name": "same", "owner": {"name": "t"}, "metadata": {"description": "`+desc+`"}, "plugins": []}`)
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", desc}} {
			c := exec.Command("git", args...)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		return dir
	}
	a, b := repo("from a"), repo("from b")
	w := newWharfRun(t)
	cmds := []*exec.Cmd{w.cmd("marketplace", "add", "file://"+a), w.cmd("marketplace", "add", "file://"+b)}
	outs := make([]bytes.Buffer, 2)
	for i, c := range cmds {
		c.Stdout, c.Stderr = &outs[i], &outs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var won []int
	for i, c := range cmds {
		if err := c.Wait(); err == nil {
			won = append(won, i)
		} else if !strings.Contains(outs[i].String(), "already known from") {
			t.Fatalf("the loser must be refused as a conflict:\n%s", outs[i].String())
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d adds succeeded, want 1:\n%s\n%s", len(won), outs[0].String(), outs[1].String())
	}
	desc := []string{"from a", "from b"}[won[0]]
	manifest, err := os.ReadFile(filepath.Join(w.home, "marketplaces", "same", ".claude-plugin", "marketplace.json"))
	if err != nil || !strings.Contains(string(manifest), desc) {
		t.Fatalf("the clone on disk is not the winner's (%s): %s %v", desc, manifest, err)
	}
}
