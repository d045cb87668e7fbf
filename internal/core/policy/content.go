package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/capability"
)

// Content is what a plugin version's tree shows (package capability):
// its capability set and content findings. A request that carries it
// gives Rego input.capabilities and input.findings; without it both are
// undefined.
type Content struct {
	Capabilities capability.Set       `json:"capabilities"`
	Findings     []capability.Finding `json:"findings"`
	// key is memoKey computed once, by ContentOf: a load pass asks
	// about the same content at every start.
	key []byte
}

// ContentOf is the Content of a capability report (nil for nil). Do not
// change the report's lists afterwards: the content's identity is taken
// now.
func ContentOf(r *capability.Report) *Content {
	if r == nil {
		return nil
	}
	c := &Content{Capabilities: r.Capabilities, Findings: r.Findings}
	c.key = c.hash()
	return c
}

var (
	keyCapabilities = ast.StringTerm("capabilities")
	keyFindings     = ast.StringTerm("findings")
)

// generic is the content as plain JSON values: what Input shows and what
// the AST input is built from, so the two cannot differ.
func (c *Content) generic() (caps, findings any) {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // strings, numbers, bools and slices only
	}
	var doc struct {
		Capabilities any `json:"capabilities"`
		Findings     any `json:"findings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		panic(err)
	}
	if doc.Findings == nil {
		doc.Findings = []any{}
	}
	return doc.Capabilities, doc.Findings
}

// contentItems are the input items of the content, none without it.
func (c *Content) contentItems() [][2]*ast.Term {
	if c == nil {
		return nil
	}
	caps, findings := c.generic()
	cv, err := ast.InterfaceToValue(caps)
	if err != nil {
		panic(err)
	}
	fv, err := ast.InterfaceToValue(findings)
	if err != nil {
		panic(err)
	}
	return [][2]*ast.Term{ast.Item(keyCapabilities, ast.NewTerm(cv)), ast.Item(keyFindings, ast.NewTerm(fv))}
}

// memoKey is a hash of the content: requests about two trees with
// different capabilities or findings are different requests.
func (c *Content) memoKey() []byte {
	if c == nil {
		return nil
	}
	if c.key != nil {
		return c.key
	}
	return c.hash()
}

func (c *Content) hash() []byte {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.AppendEncode(nil, sum[:])
}

// The capability set and findings are also reachable as
// input.plugin.capabilities and input.plugin.findings, the names the
// admission documents use. input.plugin stays the plugin's name (a
// string: every existing rule compares it), so the two are an alias
// resolved when a module is read: a reference input.plugin.capabilities...
// (or input.plugin.findings..., or an import of either) is rewritten to
// input.capabilities... (input.findings...). Any other reference into
// input.plugin, and an import of input.plugin itself, is refused: in
// Rego it would be undefined, and a deny rule that reads an undefined
// value never fires.
var (
	inputVar      = ast.VarTerm("input")
	inputPluginKw = ast.StringTerm("plugin")
)

// aliasPluginContent rewrites the input.plugin.capabilities and
// input.plugin.findings references of m in place. It returns an error
// naming the location of a reference into input.plugin it cannot give a
// meaning to.
func aliasPluginContent(m *ast.Module) error {
	var bad error
	for _, imp := range m.Imports {
		if r, ok := imp.Path.Value.(ast.Ref); ok && len(r) == 2 && r[0].Equal(inputVar) && r[1].Equal(inputPluginKw) && bad == nil {
			bad = fmt.Errorf("%v: import input.plugin: input.plugin is the plugin's name (a string); import input.plugin.capabilities or input.plugin.findings", imp.Location)
		}
	}
	// Every term, those of `some x in ...` declarations too (which
	// ast.TransformRefs does not reach).
	ast.NewGenericVisitor(func(x any) bool {
		t, ok := x.(*ast.Term)
		if !ok {
			return false
		}
		r, ok := t.Value.(ast.Ref)
		if !ok || len(r) < 3 || !r[0].Equal(inputVar) || !r[1].Equal(inputPluginKw) {
			return false
		}
		if r[2].Equal(keyCapabilities) || r[2].Equal(keyFindings) {
			out := make(ast.Ref, 0, len(r)-1)
			out = append(out, r[0])
			t.Value = append(out, r[2:]...)
			return false
		}
		if bad == nil {
			bad = fmt.Errorf("%v: %v: input.plugin is the plugin's name (a string); under it only input.plugin.capabilities and input.plugin.findings are defined", t.Location, r)
		}
		return false
	}).Walk(m)
	return bad
}
