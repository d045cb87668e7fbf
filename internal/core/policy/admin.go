package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// adminModuleFile names the module adminModule builds.
const adminModuleFile = "wharf_admin.rego"

// adminModule builds the rules that turn each layer's admin denies into
// reasons (see the end of rego/wharf.rego): one rule per layer with admin
// modules, naming its package, and starting with the conditions every deny
// rule of the layer puts on the request (see adminGuards), so that OPA's
// rule index skips the layer's rules for requests none of them can match.
// It depends only on the layers' names and admin modules, all part of the
// version. nil when no layer has admin modules. modules are keyed
// "<layer>/<file>".
func adminModule(layers []compiledLayer, modules map[string]*ast.Module) (*ast.Module, error) {
	var b strings.Builder
	for i, l := range layers {
		if !l.HasModules {
			continue
		}
		var mods []*ast.Module
		for k, m := range modules {
			if strings.HasPrefix(k, l.Name+"/") {
				mods = append(mods, m)
			}
		}
		fmt.Fprintf(&b, "outcome contains [\"deny\", r(%d, \"admin\", admin_message(msg))] if {\n", i)
		for _, g := range adminGuards(mods) {
			fmt.Fprintf(&b, "\t%v in %v\n", g.ref, ast.NewSet(g.values...))
		}
		fmt.Fprintf(&b, "\tnot waived(%d)\n", i)
		fmt.Fprintf(&b, "\tsome msg in data.wharf.admin[%q].deny\n}\n\n", l.Name)
	}
	if b.Len() == 0 {
		return nil, nil
	}
	return ast.ParseModuleWithOpts(adminModuleFile, "package wharf.policy\n\n"+b.String(), ast.ParserOptions{RegoVersion: ast.RegoV1})
}

// guard is a condition every deny rule of a layer shares: the input value
// at ref is one of values.
type guard struct {
	ref    ast.Ref
	values []*ast.Term
}

// adminGuards finds the input references that every deny rule of mods
// compares with a constant in its body (`input.action == "install"`,
// `input.plugin = "x@y"`): a rule can only add a reason when the request
// has one of those values there. A comparison counts only when it is a
// plain expression of the rule's body (not negated, no `with`), and a rule
// that declares a local named input counts as having none. No guard when a
// rule has no such comparison.
func adminGuards(mods []*ast.Module) []guard {
	var common map[string]*guard
	rules := 0
	for _, m := range mods {
		for _, r := range m.Rules {
			if r.Head.Name.String() != "deny" && (len(r.Head.Reference) == 0 || r.Head.Reference[0].Value.Compare(ast.Var("deny")) != 0) {
				continue
			}
			rules++
			conds := ruleConditions(r)
			if common == nil {
				common = conds
				continue
			}
			for k, g := range common {
				c, ok := conds[k]
				if !ok {
					delete(common, k)
					continue
				}
				g.values = append(g.values, c.values...)
			}
		}
	}
	if rules == 0 {
		return nil
	}
	keys := make([]string, 0, len(common))
	for k := range common {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]guard, 0, len(keys))
	for _, k := range keys {
		out = append(out, *common[k])
	}
	return out
}

// ruleConditions lists the input references r's body compares with a
// constant, by the reference's text.
func ruleConditions(r *ast.Rule) map[string]*guard {
	out := map[string]*guard{}
	shadowed := false
	ast.WalkExprs(r, func(e *ast.Expr) bool {
		if sd, ok := e.Terms.(*ast.SomeDecl); ok {
			ast.WalkVars(sd, func(v ast.Var) bool {
				if v.Equal(ast.InputRootDocument.Value) {
					shadowed = true
				}
				return shadowed
			})
		}
		return shadowed
	})
	if shadowed {
		return out
	}
	for _, e := range r.Body {
		if e.Negated || len(e.With) > 0 || !(e.IsEquality() || e.IsCall() && e.Operator().Equal(ast.Equal.Ref()) && len(e.Operands()) == 2) {
			continue
		}
		a, b := e.Operand(0), e.Operand(1)
		if !isInputRef(a) {
			a, b = b, a
		}
		if !isInputRef(a) || !isScalar(b) {
			continue
		}
		ref := a.Value.(ast.Ref)
		k := ref.String()
		if _, ok := out[k]; !ok {
			out[k] = &guard{ref: ref, values: []*ast.Term{b}}
		}
	}
	return out
}

func isInputRef(t *ast.Term) bool {
	r, ok := t.Value.(ast.Ref)
	return ok && len(r) > 1 && r[0].Equal(ast.InputRootDocument) && r.IsGround()
}

// isScalar: strings, booleans and null, whose equality is plain set
// membership (numbers are left out: 1 == 1.0).
func isScalar(t *ast.Term) bool {
	switch t.Value.(type) {
	case ast.String, ast.Boolean, ast.Null:
		return true
	}
	return false
}
