package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func memoLayers(blocked string) []Layer {
	return []Layer{
		{Name: "org", Settings: []byte(`{"strictKnownMarketplaces":["corp/*"],"blockedMarketplaces":["` + blocked + `"],"enabledPlugins":{"audit@corp":true}}`)},
		{Name: "team", Modules: map[string]string{"t.rego": "package wharf.admin.team\n\ndeny contains \"deploy needs a ticket\" if startswith(input.plugin, \"deploy@\")\n"}},
	}
}

func installReq(p string) Request {
	return Request{Action: ActionInstall, Plugin: mustID(p), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")}}
}

// Opening a policy reads, parses and checks it but compiles nothing; the
// first decision compiles once, also when many ask at the same time.
func TestCompileIsLazyAndOnce(t *testing.T) {
	e, err := NewEngine(memoLayers("evil/*"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.Version(), "sha256:") || len(e.LayerNames()) != 2 {
		t.Fatalf("version %q, layers %v before any decision", e.Version(), e.LayerNames())
	}
	if n := e.compiles.Load(); n != 0 {
		t.Fatalf("NewEngine compiled %d times", n)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d, err := e.Decide(ctx, installReq(fmt.Sprintf("p%d@corp", i))); err != nil || !d.Allowed {
				t.Errorf("%+v %v", d, err)
			}
		}()
	}
	wg.Wait()
	if d, _ := e.Decide(ctx, installReq("deploy@corp")); d.Allowed || d.Reasons[0].Layer != "team" {
		t.Errorf("admin rule not applied: %+v", d)
	}
	if n := e.compiles.Load(); n != 1 {
		t.Fatalf("compiled %d times, want once", n)
	}
}

// Admin modules that parse but do not compile are still refused when the
// policy is opened; one that uses the built-in module's functions compiles.
func TestAdminCompileErrorsAtOpen(t *testing.T) {
	for name, mod := range map[string]string{
		"undefined function":          "package wharf.admin.org\n\ny := no_such_function(1)\n",
		"unsafe variable":             "package wharf.admin.org\n\ndeny contains msg if input.x == 1\n",
		"undefined built-in function": "package wharf.admin.org\n\ndeny contains \"x\" if data.wharf.policy.no_such(input.plugin)\n",
	} {
		_, err := NewEngine([]Layer{{Name: "org", Modules: map[string]string{"a.rego": mod}}})
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != TypeLayerInvalid || !strings.Contains(err.Error(), "compiling policy") {
			t.Errorf("%s: err = %v, want a compile error", name, err)
		}
	}
	e, err := NewEngine([]Layer{{Name: "org", Modules: map[string]string{"a.rego": "package wharf.admin.org\n\ndeny contains data.wharf.policy.state_name(false) if input.plugin == \"x@corp\"\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.Decide(ctx, installReq("x@corp")); err != nil || d.Allowed || d.Reasons[0].Message != "off" {
		t.Errorf("admin rule using the built-in module: %+v %v", d, err)
	}
}

// A second process with the same policy answers a memoized request without
// compiling; a request it has not seen compiles.
func TestMemoHitDoesNotCompile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cache", "policy-memo")
	e1, err := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{installReq("a@corp"), installReq("deploy@corp"), {Action: ActionDisable, Plugin: mustID("audit@corp")}}
	var want []Decision
	for _, r := range reqs {
		d, err := e1.Decide(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
	}
	if want[0].Allowed == want[1].Allowed || want[2].Allowed || want[2].Forced != "on" {
		t.Fatalf("unexpected decisions %+v", want)
	}
	if err := e1.SaveMemo(); err != nil {
		t.Fatal(err)
	}
	e2, err := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		d, err := e2.Decide(ctx, r)
		if err != nil || !reflect.DeepEqual(d, want[i]) {
			t.Errorf("%s from the memo: %+v %v, want %+v", r.target(), d, err, want[i])
		}
	}
	if n := e2.compiles.Load(); n != 0 {
		t.Fatalf("memo hits compiled %d times", n)
	}
	if d, err := e2.Decide(ctx, installReq("b@corp")); err != nil || !d.Allowed {
		t.Fatalf("%+v %v", d, err)
	}
	if n := e2.compiles.Load(); n != 1 {
		t.Fatalf("a request not in the memo compiled %d times, want once", n)
	}
}

// A memo written under another policy version is not used: the decision is
// evaluated under the policy in force.
func TestMemoIgnoredUnderAnotherVersion(t *testing.T) {
	file := filepath.Join(t.TempDir(), "memo")
	e1, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	if d, err := e1.Decide(ctx, installReq("a@corp")); err != nil || !d.Allowed {
		t.Fatalf("%+v %v", d, err)
	}
	if err := e1.SaveMemo(); err != nil {
		t.Fatal(err)
	}
	// Only the blocklist changes: corp is now blocked.
	e2, _ := NewEngine(memoLayers("corp/*"), WithMemoFile(file))
	if e2.Version() == e1.Version() {
		t.Fatal("versions agree")
	}
	d, err := e2.Decide(ctx, installReq("a@corp"))
	if err != nil || d.Allowed || d.Reasons[0].Rule != "blockedMarketplaces" || d.PolicyVersion != e2.Version() {
		t.Fatalf("decision under the new version: %+v %v", d, err)
	}
	// A file that claims the new version for decisions made under the old
	// one is not trusted either.
	b, _ := os.ReadFile(file)
	forged := strings.ReplaceAll(string(b), `"version":"`+e1.Version()+`"`, `"version":"`+e2.Version()+`"`)
	if forged == string(b) {
		t.Fatal("memo file does not hold the version")
	}
	if err := os.WriteFile(file, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	e3, _ := NewEngine(memoLayers("corp/*"), WithMemoFile(file))
	if d, err := e3.Decide(ctx, installReq("a@corp")); err != nil || d.Allowed {
		t.Fatalf("forged memo entry used: %+v %v", d, err)
	}
	// Reload to a new version inside one process: the memo follows.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "managed-settings.json"), `{"blockedMarketplaces":[]}`)
	e4, err := Open(Sources{ManagedDir: dir}, WithMemoFile(filepath.Join(dir, "memo")))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := e4.Decide(ctx, installReq("a@corp")); !d.Allowed {
		t.Fatalf("%+v", d)
	}
	writeFile(t, filepath.Join(dir, "managed-settings.json"), `{"blockedMarketplaces":["corp/*"]}`)
	if changed, err := e4.Reload(ctx); !changed || err != nil {
		t.Fatal(changed, err)
	}
	if d, _ := e4.Decide(ctx, installReq("a@corp")); d.Allowed {
		t.Fatalf("decision of the old version after Reload: %+v", d)
	}
}

// A memo file that cannot be read is ignored; a corrupt memo is replaced on
// save, a file that is not a memo at all is left alone.
func TestMemoCorruptOrForeignFile(t *testing.T) {
	dir := t.TempDir()
	want, _ := NewEngine(memoLayers("evil/*"))
	wantD, _ := want.Decide(ctx, installReq("deploy@corp"))
	for name, content := range map[string]string{
		"corrupt":   memoHeader + `{"version":"sha256:`,
		"truncated": memoHeader[:7],
		"empty":     "",
		"wrong":     memoHeader + `{"version":"x","decisions":[{"allowed":true,"reasons":[{"layer":"a"}],"warnings":[]}],"keys":{"k":0}}`,
		// The previous format (keys in the JSON) is a memo too: replaced.
		"format 1": "wharf policy decision memo 1\n" + `{"version":"x","build":"y","decisions":[],"keys":{}}`,
		"keys cut": memoHeader + `{"version":"x","build":"y","decisions":[]}` + "\n\x05\x01",
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		e, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
		if d, err := e.Decide(ctx, installReq("deploy@corp")); err != nil || !reflect.DeepEqual(d, wantD) {
			t.Errorf("%s: %+v %v", name, d, err)
		}
		if err := e.SaveMemo(); err != nil {
			t.Errorf("%s: SaveMemo: %v", name, err)
		}
		if doc, ok := readMemo(file); !ok || len(doc.Decisions) != 1 || doc.Version != e.Version() {
			t.Errorf("%s: memo not replaced: %+v %v", name, doc, ok)
		}
	}
	foreign := filepath.Join(dir, "managed-settings.json")
	writeFile(t, foreign, `{"blockedMarketplaces":[]}`)
	e, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(foreign))
	if d, err := e.Decide(ctx, installReq("deploy@corp")); err != nil || !reflect.DeepEqual(d, wantD) {
		t.Errorf("foreign: %+v %v", d, err)
	}
	err := e.SaveMemo()
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != TypeMemoWrite || !strings.Contains(err.Error(), foreign) {
		t.Errorf("SaveMemo over a foreign file: %v", err)
	}
	if b, _ := os.ReadFile(foreign); string(b) != `{"blockedMarketplaces":[]}` {
		t.Errorf("foreign file changed: %s", b)
	}
	// A directory that cannot be created is an error naming the file.
	blocker := filepath.Join(dir, "blocker")
	writeFile(t, blocker, "x")
	e, _ = NewEngine(memoLayers("evil/*"), WithMemoFile(filepath.Join(blocker, "memo")))
	e.Decide(ctx, installReq("a@corp"))
	if err := e.SaveMemo(); !errors.As(err, &pe) || pe.Type != TypeMemoWrite {
		t.Errorf("SaveMemo under a file: %v", err)
	}
}

// Concurrent decisions share the memo safely (run with -race), and the memo
// keeps at most memoMaxEntries decisions.
func TestMemoConcurrentAndBounded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "memo")
	e, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				p := fmt.Sprintf("p%d@corp", i%10)
				if i%7 == 0 {
					p = "deploy@corp"
				}
				d, err := e.Decide(ctx, installReq(p))
				if err != nil || d.Allowed == (p == "deploy@corp") {
					t.Errorf("%s: %+v %v", p, d, err)
				}
				if i%13 == 0 {
					if err := e.SaveMemo(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := e.SaveMemo(); err != nil {
		t.Fatal(err)
	}
	if doc, ok := readMemo(file); !ok || len(doc.Decisions) != 11 {
		t.Fatalf("memo holds %d decisions, want 11", len(doc.Decisions))
	}
	for i := 0; i < memoMaxEntries+10; i++ {
		e.Decide(ctx, Request{Action: ActionSideload, Path: fmt.Sprintf("/p/%d", i)})
	}
	if err := e.SaveMemo(); err != nil {
		t.Fatal(err)
	}
	if doc, _ := readMemo(file); len(doc.Decisions) != memoMaxEntries {
		t.Fatalf("memo holds %d decisions, want at most %d", len(doc.Decisions), memoMaxEntries)
	}
}

// FuzzReadMemo: any file content is either ignored or read into decisions
// that Decide could have returned; never a panic.
func FuzzReadMemo(f *testing.F) {
	build := CodeStamp()
	f.Add([]byte(memoHeader + `{"version":"sha256:x","build":"` + build + `","decisions":[{"allowed":true,"reasons":[],"warnings":[],"policyVersion":"sha256:x"}]}` + "\n\x01\x01k\x00"))
	f.Add([]byte(memoHeader + `{"version":"sha256:x","build":"` + build + `","decisions":[{"allowed":false,"reasons":[{"layer":"org","rule":"admin","message":"no"}],"warnings":["w"],"policyVersion":"sha256:x"}]}` + "\n\x02\x01k\x00\x03j\x00i\x00"))
	f.Add([]byte(memoHeader + `{"version":"sha256:x","build":"` + build + `","decisions":[{"allowed":true,"reasons":[{"layer":"org"}]}]}` + "\n\x03\x01k\x00\x01j\x01\x01i\x7f"))
	f.Add([]byte(memoHeader + `{"version":"sha256:x","build":"` + build + `","decisions":[]}` + "\n\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02"))
	f.Add([]byte(memoHeader + `{"version":`))
	f.Add([]byte(`{"blockedMarketplaces":[]}`))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(dir, "memo")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		doc, ok := readMemo(file)
		if !ok {
			return
		}
		if doc.Version == "" {
			t.Fatal("memo without a version accepted")
		}
		for k, d := range doc.Decisions {
			if d.Allowed != (len(d.Reasons) == 0) || d.Reasons == nil || d.Warnings == nil || d.PolicyVersion != doc.Version {
				t.Fatalf("%q: decision %+v kept", k, d)
			}
		}
	})
}

// A memo made by another build of wharf is not used: the Go code that
// computes a request's facts is part of every decision.
func TestMemoIgnoredFromAnotherBuild(t *testing.T) {
	if CodeStamp() == "" {
		t.Fatal("empty code stamp")
	}
	file := filepath.Join(t.TempDir(), "memo")
	e1, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	if _, err := e1.Decide(ctx, installReq("a@corp")); err != nil {
		t.Fatal(err)
	}
	if err := e1.SaveMemo(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	stamp, _ := json.Marshal(CodeStamp())
	other := strings.Replace(string(b), `"build":`+string(stamp), `"build":"go0.0 another build"`, 1)
	if other == string(b) {
		t.Fatal("memo file does not hold the build")
	}
	// Same build: answered from the memo, nothing compiled.
	e2, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	if _, err := e2.Decide(ctx, installReq("a@corp")); err != nil || e2.compiles.Load() != 0 {
		t.Fatalf("same build: %d compiles, %v", e2.compiles.Load(), err)
	}
	// Another build: evaluated again.
	if err := os.WriteFile(file, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	e3, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	if _, err := e3.Decide(ctx, installReq("a@corp")); err != nil || e3.compiles.Load() != 1 {
		t.Fatalf("another build: %d compiles, %v", e3.compiles.Load(), err)
	}
}

// The memo file gives back every key byte for byte (memoKey's NUL
// separators, any byte at all) with its decision, and a body cut anywhere
// is not read.
func TestMemoFileRoundTrip(t *testing.T) {
	allow := Decision{Allowed: true, Reasons: []Reason{}, Warnings: []string{}, PolicyVersion: "sha256:v"}
	deny := Decision{Reasons: []Reason{{Layer: "org", Rule: "admin", Message: "no"}}, Warnings: []string{"w"}, PolicyVersion: "sha256:v"}
	doc := memoDoc{Version: "sha256:v", Build: CodeStamp(), Decisions: map[string]Decision{}}
	for i := range 300 {
		k := fmt.Sprintf("load\x00p%03d\x00bench\x00\x00\"git\" \"file:///m\"\x00\xff\x80%s", i, strings.Repeat("\n", i%3))
		doc.Decisions[k] = allow
		if i%7 == 0 {
			doc.Decisions[k] = deny
		}
	}
	doc.Decisions[""] = allow
	body, err := encodeMemo(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := decodeMemo(body)
	if !ok || !reflect.DeepEqual(got, doc) {
		t.Fatalf("round trip: ok %v, %d decisions, want %d", ok, len(got.Decisions), len(doc.Decisions))
	}
	again, _ := encodeMemo(got)
	if !bytes.Equal(again, body) {
		t.Error("encoding is not deterministic")
	}
	nl := bytes.IndexByte(body, '\n')
	for cut := nl + 1; cut < len(body); cut += 97 {
		if _, ok := decodeMemo(body[:cut]); ok {
			t.Fatalf("body cut at %d of %d read", cut, len(body))
		}
	}
	if _, ok := decodeMemo(append(slices.Clip(body), 0)); ok {
		t.Error("trailing byte read")
	}
	// Read from a file, the keys slices of readMemo's own buffer: the
	// same memo; a cut file is not one.
	if owned, ok := decodeMemoIn(slices.Clone(body), true); !ok || !reflect.DeepEqual(owned, doc) {
		t.Fatalf("owned body: ok %v, %d decisions, want %d", ok, len(owned.Decisions), len(doc.Decisions))
	}
	file := filepath.Join(t.TempDir(), "memo")
	if err := os.WriteFile(file, append([]byte(memoHeader), body...), 0o644); err != nil {
		t.Fatal(err)
	}
	if read, ok := readMemo(file); !ok || !reflect.DeepEqual(read, doc) {
		t.Fatalf("readMemo: ok %v, %d decisions, want %d", ok, len(read.Decisions), len(doc.Decisions))
	}
	if err := os.WriteFile(file, append([]byte(memoHeader), body[:len(body)-1]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := readMemo(file); ok {
		t.Error("readMemo read a cut file")
	}
}
