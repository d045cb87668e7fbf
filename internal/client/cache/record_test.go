package cache

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

func installedRecord(t *testing.T, c *Cache) Record {
	t.Helper()
	v, err := c.Materialize(bg, pid, "1.0.0", files(map[string]string{
		".claude-plugin/plugin.json": `{"name":"deploy"}`,
		"bin/run*":                   "#!/bin/sh\n",
		"commands/ship.md":           "ship",
		"link":                       "->commands/ship.md",
	}))
	if err != nil {
		t.Fatal(err)
	}
	rec := RecordFor(v, "project")
	rec.ProjectPath = "/src/app"
	rec.GitCommitSha = "0123456789abcdef0123456789abcdef01234567"
	rec.Auto = true
	rec.Source = &plugin.Source{Kind: plugin.SourceGitSubdir, URL: "https://git.example/corp/tools.git", Path: "plugins/deploy", Ref: "v1"}
	return rec
}

// A record read back from the registry is the record written, whichever
// encoding stored it: records earlier versions stored as JSON stay
// readable, and the next write stores them in the binary encoding.
func TestRegistryRecordEncodings(t *testing.T) {
	c := newCache(t, Options{Now: func() time.Time { return time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC) }})
	rec := installedRecord(t, c)
	if err := c.Put(bg, rec); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(pid)
	if err != nil {
		t.Fatal(err)
	}
	want := rec
	want.InstalledAt = time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	want.LastUpdated = want.InstalledAt
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("binary round trip:\n got %+v\nwant %+v", got, want)
	}
	if len(got.Fingerprint.Entries) < 5 || got.Fingerprint.Entries[0].Hash != "" && len(got.Fingerprint.Entries[0].Hash) != 64 {
		t.Fatalf("fingerprint not kept: %+v", got.Fingerprint)
	}
	raw := rawRecord(t, c, pid)
	if !strings.HasPrefix(string(raw), recordMagic) {
		t.Fatalf("record stored as %q..., want the binary encoding", raw[:8])
	}
	// The fingerprint still checks against the tree through the decoded record.
	if err := got.Pin().CheckFast(got.InstallPath); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" {
		for _, e := range got.Fingerprint.Entries {
			if (e.Kind == "d") != (e.Ctime == 0) {
				t.Fatalf("entry %+v: files and symlinks keep a ctime, directories none", e)
			}
		}
	}

	// A record in the binary encoding before sources reads back without one.
	v2, err := encodeRecordAs(got, recordMagicV2)
	if err != nil {
		t.Fatal(err)
	}
	putRaw(t, c, pid, v2)
	fromV2, err := c.Get(pid)
	if err != nil {
		t.Fatal(err)
	}
	noSource := want
	noSource.Source = nil
	if !reflect.DeepEqual(fromV2, noSource) {
		t.Fatalf("binary record before sources:\n got %+v\nwant %+v", fromV2, noSource)
	}

	// A record in the binary encoding before ctimes reads back without them.
	v1, err := encodeRecordAs(got, recordMagicV1)
	if err != nil {
		t.Fatal(err)
	}
	putRaw(t, c, pid, v1)
	fromV1, err := c.Get(pid)
	if err != nil {
		t.Fatal(err)
	}
	noCtimes := noSource
	noCtimes.Fingerprint.Entries = slices.Clone(want.Fingerprint.Entries)
	for i := range noCtimes.Fingerprint.Entries {
		noCtimes.Fingerprint.Entries[i].Ctime = 0
	}
	if !reflect.DeepEqual(fromV1, noCtimes) {
		t.Fatalf("earlier binary record:\n got %+v\nwant %+v", fromV1, noCtimes)
	}
	if err := fromV1.Pin().CheckFast(fromV1.InstallPath); err != nil {
		t.Fatal(err)
	}

	// A record stored as JSON by an earlier version.
	old := want
	old.InstalledAt = time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("", 3600))
	js, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	putRaw(t, c, pid, js)
	list, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !reflect.DeepEqual(list[0].Fingerprint, old.Fingerprint) || !reflect.DeepEqual(list[0].Source, old.Source) || !list[0].InstalledAt.Equal(old.InstalledAt) ||
		list[0].InstallPath != old.InstallPath || !list[0].Auto || list[0].Digest != old.Digest {
		t.Fatalf("JSON record read back as %+v, want %+v", list, old)
	}
	// Rewriting it migrates it and keeps its install time.
	if err := c.Put(bg, list[0]); err != nil {
		t.Fatal(err)
	}
	if raw := rawRecord(t, c, pid); !strings.HasPrefix(string(raw), recordMagic) {
		t.Fatalf("rewritten record stored as %q..., want the binary encoding", raw[:8])
	}
	got, err = c.Get(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !got.InstalledAt.Equal(old.InstalledAt) {
		t.Fatalf("installedAt %v after migration, want %v", got.InstalledAt, old.InstalledAt)
	}
	if _, off := got.InstalledAt.Zone(); off != 3600 {
		t.Fatalf("installedAt zone offset %d after migration, want 3600", off)
	}
}

// A corrupt record (truncated, garbled, an unknown fingerprint kind, stored
// under another plugin's key) is a clear error naming the plugin and the
// next step, never a panic or a record with half its fields — and only
// that plugin's: List still returns every other record, GC keeps the
// plugin's versions, and a new record written over it repairs it.
func TestRegistryCorruptBinaryRecord(t *testing.T) {
	c := newCache(t, Options{})
	rec := installedRecord(t, c)
	rec.InstalledAt = time.Unix(1700000000, 0).UTC()
	rec.LastUpdated = rec.InstalledAt
	good, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	other := plugin.MustParseID("lint@corp")
	ov, err := c.Materialize(bg, other, "2.0.0", files(map[string]string{".claude-plugin/plugin.json": `{"name":"lint"}`}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(bg, RecordFor(ov, "user")); err != nil {
		t.Fatal(err)
	}
	elsewhere := rec
	elsewhere.ID = other
	misplaced, err := encodeRecord(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	kind := strings.Index(string(good), ".claude-plugin/plugin.json") + len(".claude-plugin/plugin.json")
	cases := map[string][]byte{
		"truncated":    good[:len(good)-7],
		"only magic":   []byte(recordMagic),
		"trailing":     append(append([]byte(nil), good...), 0),
		"huge count":   append([]byte(recordMagic), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
		"unknown kind": func() []byte { b := append([]byte(nil), good...); b[kind] = 'z'; return b }(),
		"wrong key":    misplaced,
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			putRaw(t, c, pid, b)
			recs, err := c.List()
			if err != nil || len(recs) != 1 || recs[0].ID != other {
				t.Fatalf("List = %+v, %v; want the other plugin's record and no error", recs, err)
			}
			_, broken, err := c.Scan()
			if err != nil || len(broken) != 1 || broken[0].ID != pid || broken[0].Key != pid.String() {
				t.Fatalf("Scan broken = %+v, %v; want %s", broken, err, pid)
			}
			for _, err := range []error{broken[0].Err, func() error { _, err := c.Get(pid); return err }()} {
				var pe *plugin.Error
				if !errors.As(err, &pe) || pe.Type != TypeRecordCorrupt || pe.Object != pid.String() ||
					!strings.Contains(pe.Hint, "wharf install "+pid.String()+" --force") || !strings.Contains(pe.Hint, "wharf doctor --repair") ||
					!errors.Is(err, errRecord) || !errors.Is(err, ErrRecordCorrupt) {
					t.Fatalf("error = %v, want a %s error for %s wrapping errRecord with the way out", err, TypeRecordCorrupt, pid)
				}
			}
			// GC long after: the damaged plugin's version stays.
			if _, err := c.GC(bg, time.Now().Add(100*DefaultGrace)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(rec.InstallPath); err != nil {
				t.Fatalf("GC removed the version of a plugin whose record is damaged: %v", err)
			}
		})
	}
	// The repair the error names: writing the record again.
	if err := c.Put(bg, rec); err != nil {
		t.Fatalf("Put over a damaged record: %v", err)
	}
	if got, err := c.Get(pid); err != nil || got.Version != "1.0.0" {
		t.Fatalf("after the repair Get = %+v, %v", got, err)
	}
	// And uninstalling the plugin removes a damaged record.
	putRaw(t, c, pid, []byte(recordMagic))
	if err := c.Delete(bg, pid); err != nil {
		t.Fatalf("Delete of a damaged record: %v", err)
	}
	if _, broken, _ := c.Scan(); len(broken) != 0 {
		t.Fatalf("damaged record still there after Delete: %+v", broken)
	}
}

// FuzzDecodeRecord feeds arbitrary bytes to the registry record decoder:
// it errs or returns a record that encodes back to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	rec := Record{ID: pid, Version: "1.0.0", Scope: "user", InstallPath: "/h/cache/corp/deploy/1.0.0", Digest: "w1:x",
		InstalledAt: time.Unix(1, 2).UTC(), LastUpdated: time.Unix(3, 4).UTC(),
		Fingerprint: trust.FP{Entries: []trust.FPEntry{{Path: ".", Kind: "d", Mode: 0o555}, {Path: "a", Kind: "x", Size: 3, Mtime: -5, Ctime: 7, Mode: 0o555, Hash: "ab"}}}}
	b, err := encodeRecord(rec)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	withSource := rec
	withSource.Source = &plugin.Source{Kind: plugin.SourceURL, URL: "https://git.example/x.git", Ref: "main"}
	if b, err = encodeRecord(withSource); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if b, err = encodeRecordAs(withSource, recordMagicV2); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(recordMagic))
	if b, err = encodeRecordAs(rec, recordMagicV1); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	js, _ := json.Marshal(rec)
	f.Add(js)
	f.Fuzz(func(t *testing.T, in []byte) {
		rec, err := decodeRecord(in)
		if err != nil || !strings.HasPrefix(string(in), recordMagic) {
			return
		}
		out, err := encodeRecord(rec)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		again, err := decodeRecord(out)
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("re-encoded record decodes to %+v, %v; want %+v", again, err, rec)
		}
	})
}

func rawRecord(t *testing.T, c *Cache, id plugin.ID) []byte {
	t.Helper()
	var b []byte
	err := c.st.View(func(r store.Reader) error {
		var err error
		b, err = r.Get(BucketInstalled, id.String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func putRaw(t *testing.T, c *Cache, id plugin.ID, b []byte) {
	t.Helper()
	if err := c.st.Update(func(tx store.Tx) error { return tx.Put(BucketInstalled, id.String(), b) }); err != nil {
		t.Fatal(err)
	}
}
