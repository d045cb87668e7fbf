package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// doctorHome is a home with a directory marketplace "m" and two installed
// plugins, a@m and b@m.
func doctorHome(t *testing.T) *wharfRun {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	w := newWharfRun(t)
	plugins := map[string]map[string]string{}
	for _, p := range []string{"a", "b"} {
		plugins[p] = map[string]string{".claude-plugin/plugin.json": testworld.Manifest(p, "1.0.0"), "commands/go.md": "go " + p + "\n"}
	}
	root := testworld.Marketplace(t, t.TempDir(), "m", plugins)
	w.ok("marketplace", "add", root)
	w.ok("install", "a@m")
	w.ok("install", "b@m")
	return w
}

// fail runs wharf expecting exit code want and returns stdout and stderr.
func (w *wharfRun) fail(want int, args ...string) (string, string) {
	w.t.Helper()
	c := w.cmd(args...)
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != want {
		w.t.Fatalf("wharf %v: %v, want exit %d\n%s%s", args, err, want, stdout.String(), stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		w.t.Fatalf("wharf %v crashed:\n%s", args, s)
	}
	return stdout.String(), stderr.String()
}

func (w *wharfRun) statuses() map[string]string {
	w.t.Helper()
	var rows []listRow
	if err := json.Unmarshal([]byte(w.ok("list", "--json")), &rows); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.ID] = r.Status
	}
	return out
}

func (w *wharfRun) wantBothActive() {
	w.t.Helper()
	got := w.statuses()
	if len(got) != 2 || got["a@m"] != "active" || got["b@m"] != "active" {
		w.t.Fatalf("wharf list = %v, want a@m and b@m active", got)
	}
}

// A damaged state.db makes every command refuse, naming the file and
// `wharf doctor --repair`, and leaves the file as it is; doctor reports
// it (exit 1); doctor --repair keeps it aside and rebuilds, after which
// `wharf list` shows the installs again.
func testDoctorRepairs(t *testing.T, w *wharfRun, damage string) {
	t.Helper()
	db := filepath.Join(w.home, "state.db")
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"install", "a@m"}, {"search", "a"}} {
		_, stderr := w.fail(1, args...)
		if !strings.Contains(stderr, db) || !strings.Contains(stderr, damage) || !strings.Contains(stderr, "wharf doctor --repair") {
			t.Fatalf("wharf %v said %q; want the file, %q and the repair command", args, stderr, damage)
		}
	}
	if after, _ := os.ReadFile(db); string(after) != string(before) {
		t.Fatalf("a command changed the damaged state.db (%d bytes, now %d)", len(before), len(after))
	}
	out, _ := w.fail(1, "doctor")
	if !strings.Contains(out, "damaged") || !strings.Contains(out, damage) {
		t.Fatalf("wharf doctor said %q", out)
	}
	out = w.ok("doctor", "--repair")
	asides, _ := filepath.Glob(db + ".damaged-*")
	if len(asides) != 1 {
		t.Fatalf("damaged file kept as %v, want one state.db.damaged-<time>\n%s", asides, out)
	}
	if kept, _ := os.ReadFile(asides[0]); string(kept) != string(before) {
		t.Fatalf("the file kept aside is not the damaged file")
	}
	w.wantBothActive()
	if out := w.ok("doctor"); !strings.Contains(out, "ok, 2 installed") {
		t.Fatalf("wharf doctor after the repair said %q", out)
	}
}

func TestDoctorRepairsEmptyStateDB(t *testing.T) {
	w := doctorHome(t)
	if err := os.Truncate(filepath.Join(w.home, "state.db"), 0); err != nil {
		t.Fatal(err)
	}
	testDoctorRepairs(t, w, "empty (0 bytes)")
}

func TestDoctorRepairsHalfStateDB(t *testing.T) {
	w := doctorHome(t)
	db := filepath.Join(w.home, "state.db")
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(db, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	testDoctorRepairs(t, w, "truncated")
}

// boltMetaPage returns the page size and the freelist page of the newest
// valid meta page of a bbolt file (bbolt's format: a 16-byte page header,
// then magic, version, pageSize, flags, root bucket (16), freelist, ...).
func boltFreelist(t *testing.T, path string) (pageSize, freelist int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	ps := int64(le.Uint32(b[16+8:]))
	var best, txid uint64
	for _, off := range []int64{0, ps} {
		m := b[off+16:]
		if le.Uint32(m) != 0xED0CDAED {
			continue
		}
		if tx := le.Uint64(m[48:]); tx >= txid {
			txid, best = tx, le.Uint64(m[32:])
		}
	}
	if best < 2 || best == ^uint64(0) {
		t.Fatalf("no freelist page in %s", path)
	}
	return ps, int64(best)
}

// Garbage over the freelist page made bbolt panic in every command. Now
// every command names the damage and the repair, and the repair keeps
// everything (a read-only open does not read the freelist): the
// marketplace is still known afterwards.
func TestDoctorRepairsGarbageFreelist(t *testing.T) {
	w := doctorHome(t)
	db := filepath.Join(w.home, "state.db")
	ps, fl := boltFreelist(t, db)
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, ps)
	for i := range garbage {
		garbage[i] = byte(i*37 + 11)
	}
	if _, err := f.WriteAt(garbage, fl*ps); err != nil {
		t.Fatal(err)
	}
	f.Close()
	testDoctorRepairs(t, w, "freelist")
	if out := w.ok("search", "b"); !strings.Contains(out, "b@m") {
		t.Fatalf("after the repair the marketplace is not known: search said %q", out)
	}
}

// putRaw writes value as id's record in the installed registry of home.
func putRaw(t *testing.T, home, id string, value []byte) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(home, "state.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("installed")).Put([]byte(id), value)
	}); err != nil {
		t.Fatal(err)
	}
}

// One damaged registry record made every command fail, the hinted
// `wharf install` included. Now that plugin is failed with the way out,
// every other command works, and both ways out repair it.
func TestDamagedRecordFailsOnlyItsPlugin(t *testing.T) {
	w := doctorHome(t)
	putRaw(t, w.home, "a@m", []byte("\x00wr\x02\x05a@m"))
	var rows []struct {
		ID           string `json:"id"`
		Status       string `json:"status"`
		ErrorDetails []struct {
			Type, Hint string
		} `json:"errorDetails"`
	}
	if err := json.Unmarshal([]byte(w.ok("list", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.ID] = r.Status
		if r.ID == "a@m" && (len(r.ErrorDetails) == 0 || r.ErrorDetails[0].Type != "registry-record-corrupt" ||
			!strings.Contains(r.ErrorDetails[0].Hint, "wharf install a@m --force")) {
			t.Errorf("a@m's row %+v lacks the damaged-record error and its way out", r)
		}
	}
	if got["a@m"] != "failed" || got["b@m"] != "active" {
		t.Fatalf("wharf list = %v, want a@m failed and b@m active", got)
	}
	// The agent runtime says the same: a@m failed with the way out, b@m
	// loads.
	var status struct {
		Plugins []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorDetails []struct {
				Type, Hint string
			} `json:"errorDetails"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(w.ok("agent", "status", "--json")), &status); err != nil {
		t.Fatal(err)
	}
	agentGot := map[string]string{}
	for _, p := range status.Plugins {
		agentGot[p.ID] = p.Status
		if p.ID == "a@m" && (len(p.ErrorDetails) == 0 || p.ErrorDetails[0].Type != "registry-record-corrupt" ||
			!strings.Contains(p.ErrorDetails[0].Hint, "wharf doctor --repair")) {
			t.Errorf("agent status row of a@m %+v lacks the damaged-record error and its way out", p)
		}
	}
	if agentGot["a@m"] != "failed" || agentGot["b@m"] != "active" {
		t.Fatalf("wharf agent status = %v, want a@m failed and b@m active", agentGot)
	}
	w.ok("disable", "b@m")
	w.ok("enable", "b@m")
	w.ok("search", "a")
	w.ok("gc")
	out, _ := w.fail(1, "doctor")
	if !strings.Contains(out, "damaged record a@m") {
		t.Fatalf("wharf doctor said %q", out)
	}

	// Way out 1: reinstall.
	w.ok("install", "a@m", "--force")
	w.wantBothActive()

	// Way out 2: doctor --repair restores it from the cache.
	putRaw(t, w.home, "a@m", []byte("{not json"))
	if got := w.statuses(); got["a@m"] != "failed" {
		t.Fatalf("a@m is %q with a damaged record", got["a@m"])
	}
	out = w.ok("doctor", "--repair")
	if !strings.Contains(out, "restored a@m 1.0.0 (from the cache)") || !strings.Contains(out, "restored b@m 1.0.0 (from the registry)") {
		t.Fatalf("wharf doctor --repair said %q", out)
	}
	w.wantBothActive()
}

// A permission problem on state.db is reported as one, naming the file;
// it never suggests moving the file aside or the repair.
func TestStatePermissionErrorSaysSo(t *testing.T) {
	env := layout.New("/srv/wharf")
	err := storeOpenError(env, fmt.Errorf("store: open: %w", &fs.PathError{Op: "open", Path: env.StateDB(), Err: fs.ErrPermission}))
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != typeStorePermission || !strings.Contains(pe.Hint, "permission") || !strings.Contains(pe.Hint, env.StateDB()) ||
		strings.Contains(pe.Hint, "aside") || strings.Contains(pe.Hint, "doctor") {
		t.Fatalf("storeOpenError = %v (hint %q)", err, plugin.HintOf(err))
	}
	if err := storeOpenError(env, &store.CorruptError{Path: env.StateDB(), Reason: "x"}); !strings.Contains(plugin.HintOf(err), "wharf doctor --repair") {
		t.Fatalf("damage hint = %q", plugin.HintOf(err))
	}
	if os.Geteuid() == 0 {
		t.Skip("running as root: file modes do not refuse root; the mapping above was checked")
	}
	w := doctorHome(t)
	db := filepath.Join(w.home, "state.db")
	if err := os.Chmod(db, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(db, 0o600)
	for _, args := range [][]string{{"list"}, {"doctor", "--repair"}} {
		_, stderr := w.fail(1, args...)
		if !strings.Contains(stderr, "permission") || !strings.Contains(stderr, db) || strings.Contains(stderr, "aside") {
			t.Fatalf("wharf %v said %q", args, stderr)
		}
	}
	if asides, _ := filepath.Glob(db + ".damaged-*"); len(asides) != 0 {
		t.Fatalf("a permission problem moved the file aside: %v", asides)
	}
}
