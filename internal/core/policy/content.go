package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

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
