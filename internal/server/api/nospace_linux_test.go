//go:build linux

package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/fleet"
)

// A full disk is a 507 naming the data directory, on a real tmpfs: the
// test runs itself again in a mount namespace of its own (unshare -m, as
// root), mounts a 2 MiB tmpfs there, fills it, and reports a large
// inventory through a real server over a real bbolt file on it. Once space
// is freed, the same report is stored.
func TestFullDiskIs507OnTmpfs(t *testing.T) {
	dir := os.Getenv("WHARF_TEST_TMPFS_DIR")
	if dir == "" {
		if os.Geteuid() != 0 {
			t.Skip("mounting a tmpfs needs root (in a mount namespace); TestFullDiskIs507Injected covers the mapping")
		}
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("unshare is not installed; TestFullDiskIs507Injected covers the mapping")
		}
		if err := exec.Command(unshare, "-m", "true").Run(); err != nil {
			t.Skipf("cannot make a mount namespace here (%v); TestFullDiskIs507Injected covers the mapping", err)
		}
		cmd := exec.Command(unshare, "-m", "--propagation", "private", os.Args[0], "-test.run=^TestFullDiskIs507OnTmpfs$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "WHARF_TEST_TMPFS_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestFullDiskIs507OnTmpfs") {
			t.Fatalf("in a mount namespace: %v\n%s", err, out)
		}
		return
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	data := filepath.Join(dir, "data")
	st, err := store.OpenBolt(filepath.Join(data, "server.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Deps{Store: st, Policy: PolicyEngine, RateLimit: -1, DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	e := &env{t: t, st: st, srv: srv, hs: hs, tokens: map[Role]string{}}
	admin, _, err := EnsureAdminToken(st, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.tokens[RoleAdmin] = admin
	reporter := e.fleetToken(1)

	// Fill the file system.
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the tmpfs: %v", err)
			}
			break
		}
	}
	filler.Close()

	var ps []inventory.Plugin
	for i := range 1500 {
		ps = append(ps, invPlugin(fmt.Sprintf("plugin-%04d@corp", i), "1.0.0", fakeDigest(fmt.Sprint(i))))
	}
	rep := invReport(1, ps...)
	res := e.report(reporter, rep)
	if res.status != http.StatusInsufficientStorage {
		t.Fatalf("a report on a full disk: %d %s; want 507", res.status, res.body)
	}
	ae := res.apiError(t)
	if ae.Code != CodeNoSpace || !strings.Contains(ae.Message, "the data directory "+data+" is out of space") {
		t.Fatalf("507 message: %+v", ae)
	}
	// Free the space: the server stores the same report.
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, e.report(reporter, rep), http.StatusOK)
	var mi fleet.MachineInfo
	res = e.do("GET", "/v1/inventory/machines/"+machineN(1), admin, nil)
	mustStatus(t, res, http.StatusOK)
	res.json(t, &mi)
	if len(mi.Report.Plugins) != 1500 {
		t.Fatalf("stored report has %d plugins", len(mi.Report.Plugins))
	}
}
