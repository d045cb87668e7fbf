package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/wharfhq/wharf/plugin"
)

// TestResult is the outcome of one admin Rego test.
type TestResult struct {
	Package string `json:"package"`
	Name    string `json:"name"`
	File    string `json:"file"`
	Pass    bool   `json:"pass"`
	Skip    bool   `json:"skip,omitempty"`
	Error   string `json:"error,omitempty"`
}

// RunTests runs the OPA tests (test_* rules) of the .rego files in dir with
// OPA's tester, compiled together with wharf's built-in module so that tests
// may query data.wharf.policy.decision with mocked input and data.
func RunTests(ctx context.Context, dir string) ([]TestResult, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.rego"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, plugin.Errorf(plugin.LayerIntent, TypeLayerInvalid, dir, "put the admin rules and their *_test.rego files in that directory", "no .rego files in %s", dir)
	}
	sort.Strings(files)
	mods := map[string]*ast.Module{}
	m, err := ast.ParseModuleWithOpts(BuiltinModuleFile, builtinModule, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, err
	}
	mods["wharf-builtin/"+BuiltinModuleFile] = m
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, f, "check the file's permissions", "reading: %v", err)
		}
		m, err := ast.ParseModuleWithOpts(f, string(b), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, f, "fix the Rego syntax (Rego v1: `deny contains msg if { ... }`)", "%v", err)
		}
		if err := aliasPluginContent(m); err != nil {
			return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, f, "read the capability set as input.plugin.capabilities (or input.capabilities)", "%v", err)
		}
		if !strings.HasSuffix(f, "_test.rego") {
			// The same check as when the policy loads: tests would pass
			// on a module the engine then refuses.
			layer := strings.TrimPrefix(m.Package.Path.String(), "data.wharf.admin.")
			if err := checkBuiltins(layer, f, m); err != nil {
				return nil, err
			}
		}
		mods[f] = m
	}
	empty, _ := ast.InterfaceToValue(map[string]any{"wharf_index": buildIndex(nil)})
	ch, err := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetStore(inmem.NewFromASTObject(empty.(ast.Object))).
		SetModules(mods).
		SetParallel(1).
		// As the engine evaluates: a builtin error is an error, not a
		// rule that does not apply.
		RaiseBuiltinErrors(true).
		RunTests(ctx, nil)
	if err != nil {
		return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, dir, "fix the module named in the message", "compiling tests: %v", err)
	}
	var out []TestResult
	for r := range ch {
		tr := TestResult{Package: strings.TrimPrefix(r.Package, "data."), Name: r.Name, Pass: r.Pass(), Skip: r.Skip}
		if r.Location != nil {
			tr.File = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
		}
		if r.Error != nil {
			tr.Error = r.Error.Error()
		}
		out = append(out, tr)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].File < out[j].File || out[i].File == out[j].File && out[i].Name < out[j].Name
	})
	return out, nil
}
