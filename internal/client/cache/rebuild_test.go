package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// RebuildRegistry keeps records that decode, re-derives damaged ones from
// a sealed version directory (not one marked orphaned while another is
// not), restores every cached plugin when the registry is unreadable, and
// says what it could not restore.
func TestRebuildRegistry(t *testing.T) {
	c := newCache(t, Options{})
	mat := func(id plugin.ID, version string) *Version {
		v, err := c.Materialize(bg, id, version, files(map[string]string{".claude-plugin/plugin.json": `{"name":"` + id.Name + `"}`, "x.md": version}))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	deploy, lint, docs := plugin.MustParseID("deploy@corp"), plugin.MustParseID("lint@corp"), plugin.MustParseID("docs@corp")
	d1 := mat(deploy, "1.0.0")
	d2 := mat(deploy, "2.0.0")
	l1 := mat(lint, "1.0.0")
	mat(docs, "3.0.0")
	// docs' only version was written to after sealing: not trusted.
	dd, _ := c.Dir(docs, "3.0.0")
	os.Chmod(dd, 0o755)
	os.Chmod(filepath.Join(dd, "x.md"), 0o644)
	t.Cleanup(func() { os.Chmod(dd, 0o755) })

	good, err := encodeRecord(RecordFor(l1, "project"))
	if err != nil {
		t.Fatal(err)
	}
	installed := []store.KV{
		{Key: "lint@corp", Value: good},
		{Key: "deploy@corp", Value: []byte("\x00wr\x02garbage")},
		{Key: "not an id", Value: []byte("x")},
		{Key: "gone@corp", Value: []byte("{")},
	}
	orphans := []store.KV{{Key: "corp/deploy/2.0.0", Value: []byte(`{}`)}}

	got, problems := c.RebuildRegistry(installed, true, orphans)
	byID := map[plugin.ID]Restored{}
	for _, r := range got {
		byID[r.Record.ID] = r
	}
	if r := byID[lint]; r.From != "registry" || r.Record.Scope != "project" {
		t.Errorf("lint = %+v, want its record kept", r)
	}
	if r := byID[deploy]; r.From != "cache" || r.Record.InstallPath != d1.Path || r.Record.Digest != d1.Digest || r.Record.Scope != "user" || r.Record.Fingerprint.IsZero() {
		t.Errorf("deploy = %+v, want 1.0.0 (2.0.0 is orphaned) re-derived with digest %s", r, d1.Digest)
	}
	if _, ok := byID[docs]; ok {
		t.Errorf("docs was restored although its registry record was fine to leave out and its tree is writable")
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{`"not an id"`, "gone@corp: no version of it is in the cache; reinstall it: wharf install gone@corp"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q lack %q", all, want)
		}
	}

	// Registry unreadable: every cached plugin comes back, from the cache.
	got, problems = c.RebuildRegistry(nil, false, nil)
	byID = map[plugin.ID]Restored{}
	for _, r := range got {
		byID[r.Record.ID] = r
	}
	if byID[deploy].Record.InstallPath != d2.Path || byID[lint].Record.InstallPath != l1.Path || len(got) != 2 {
		t.Errorf("restored %+v; want deploy 2.0.0 (the newest, none orphaned) and lint", got)
	}
	if all := strings.Join(problems, "\n"); !strings.Contains(all, "docs@corp") || !strings.Contains(all, "not sealed") {
		t.Errorf("problems %q do not say docs@corp is not sealed", all)
	}
	// Each restored record can be written.
	recs := make([]Record, 0, len(got))
	for _, r := range got {
		recs = append(recs, r.Record)
	}
	if err := c.PutAll(bg, recs); err != nil {
		t.Fatalf("PutAll of the restored records: %v", err)
	}
}
