package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the decision section of golden files")

// A golden file is a txtar archive: "layers" lists the layer names in order
// (highest first); "<layer>.json" is that layer's managed settings;
// "<layer>.rego" an admin module; "request.json" the request;
// "decision.json" the expected decision (policyVersion omitted).
func loadGolden(t *testing.T, path string) (*txtar.Archive, []Layer, Request) {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range ar.Files {
		files[f.Name] = f.Data
	}
	var layers []Layer
	for _, name := range strings.Fields(string(files["layers"])) {
		l := Layer{Name: name, Origin: name + ".json"}
		if b, ok := files[name+".json"]; ok {
			l.Settings = b
		}
		for fn, b := range files {
			if strings.HasSuffix(fn, ".rego") && strings.SplitN(fn, ".", 2)[0] == name {
				if l.Modules == nil {
					l.Modules = map[string]string{}
				}
				l.Modules[fn] = string(b)
			}
		}
		layers = append(layers, l)
	}
	req, err := ParseRequest(files["request.json"])
	if err != nil {
		t.Fatal(err)
	}
	return ar, layers, req
}

func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/golden/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, layers, req := loadGolden(t, path)
			e, err := NewEngine(layers)
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if d.PolicyVersion != e.Version() || !strings.HasPrefix(d.PolicyVersion, "sha256:") {
				t.Errorf("decision version %q, engine version %q", d.PolicyVersion, e.Version())
			}
			d.PolicyVersion = ""
			got, _ := json.MarshalIndent(d, "", "  ")
			got = append(got, '\n')
			var want []byte
			idx := -1
			for i, f := range ar.Files {
				if f.Name == "decision.json" {
					want, idx = f.Data, i
				}
			}
			if *update {
				if idx < 0 {
					ar.Files = append(ar.Files, txtar.File{Name: "decision.json", Data: got})
				} else {
					ar.Files[idx].Data = got
				}
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("decision differs from %s\n--- got\n%s--- want\n%s", path, got, want)
			}
			// The error form of a denial names the layer and carries a hint.
			if !d.Allowed {
				err := d.Err(req)
				if err == nil || !strings.Contains(err.Error(), "policy layer "+d.Reasons[0].Layer) {
					t.Errorf("denial error %v does not name layer %s", err, d.Reasons[0].Layer)
				}
			}
		})
	}
}
