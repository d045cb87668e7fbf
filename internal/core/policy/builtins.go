package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/wharfhq/wharf/plugin"
)

// TypeBuiltinForbidden is the error type of an admin module that calls a
// builtin admin rules may not use: one that reaches the network, reads the
// clock, draws random numbers or looks at the running OPA. A decision must
// depend on the request and the policy only, or the same request would be
// allowed on one machine (or at one moment) and denied on another, and
// decisions are memoized per policy version.
const TypeBuiltinForbidden = "policy-builtin-forbidden"

// forbiddenPrefixes are the builtin name prefixes refused in admin modules,
// besides every builtin OPA marks nondeterministic.
var forbiddenPrefixes = []string{"http.", "net.", "rand.", "uuid.", "time.now_ns", "opa.runtime"}

// forbiddenBuiltin reports whether an admin module may not call name.
func forbiddenBuiltin(name string) bool {
	for _, p := range forbiddenPrefixes {
		if name == strings.TrimSuffix(p, ".") || strings.HasPrefix(name, p) {
			return true
		}
	}
	b, ok := ast.BuiltinMap[name]
	return ok && b.Nondeterministic
}

// checkBuiltins refuses an admin module that calls a forbidden builtin,
// naming the file and line of the first call.
func checkBuiltins(layer, file string, m *ast.Module) error {
	type call struct {
		name string
		loc  *ast.Location
	}
	var calls []call
	note := func(op ast.Ref, loc *ast.Location) {
		name := op.String()
		if forbiddenBuiltin(name) {
			calls = append(calls, call{name, loc})
		}
	}
	ast.WalkExprs(m, func(e *ast.Expr) bool {
		if e.IsCall() {
			note(e.Operator(), e.Location)
		}
		return false
	})
	ast.WalkTerms(m, func(t *ast.Term) bool {
		if c, ok := t.Value.(ast.Call); ok && len(c) > 0 {
			if r, ok := c[0].Value.(ast.Ref); ok {
				note(r, t.Location)
			}
		}
		return false
	})
	if len(calls) == 0 {
		return nil
	}
	sort.SliceStable(calls, func(i, j int) bool { return row(calls[i].loc) < row(calls[j].loc) })
	c := calls[0]
	return plugin.Errorf(plugin.LayerPolicy, TypeBuiltinForbidden, fmt.Sprintf("%s:%d", file, row(c.loc)),
		fmt.Sprintf("admin rules of layer %s decide from the request and the policy only: remove the call to %s (network, clock, random and runtime builtins are refused)", layer, c.name),
		"%s:%d: admin module calls %s, which admin rules may not use", file, row(c.loc), c.name)
}

func row(l *ast.Location) int {
	if l == nil {
		return 0
	}
	return l.Row
}

// ruleAt names the rule of module file that holds line, for an evaluation
// error: "deny" for a deny rule, else the rule's name; "" when none does.
func ruleAt(m *ast.Module, line int) string {
	if m == nil {
		return ""
	}
	best := ""
	bestRow := -1
	for _, r := range m.Rules {
		if r.Location == nil || r.Location.Row > line || r.Location.Row < bestRow {
			continue
		}
		end := r.Location.Row + strings.Count(string(r.Location.Text), "\n")
		if line > end {
			continue
		}
		best, bestRow = r.Head.Ref().String(), r.Location.Row
	}
	return best
}

// evalFailure turns an evaluation error into the reason that refuses the
// request. A builtin error inside an admin module (a bad conversion, an
// invalid regular expression: evaluation uses strict builtin errors, so
// such an error is never read as "this rule does not apply") names the
// layer, module, line and rule.
func (st *state) evalFailure(err error) (Decision, error) {
	var te *topdown.Error
	if !errors.As(err, &te) || te.Location == nil {
		return st.failed(err)
	}
	file := te.Location.File
	layer, mod, ok := strings.Cut(file, "/")
	m := st.modules[file]
	if !ok || m == nil {
		return st.failed(err)
	}
	rule := ruleAt(m, te.Location.Row)
	if rule == "" {
		rule = "rule"
	}
	msg := fmt.Sprintf("admin module %s (policy layer %s), rule %s, line %d: %s; the request is refused because the rule could not be evaluated",
		mod, layer, rule, te.Location.Row, te.Message)
	d := Decision{PolicyVersion: st.version, Warnings: append([]string{}, st.warnings...),
		Reasons: []Reason{{Layer: layer, Rule: rule, Message: msg}}}
	return d, plugin.Errorf(plugin.LayerPolicy, plugin.TypePolicyDenied, file+":"+fmt.Sprint(te.Location.Row),
		fmt.Sprintf("fix rule %s in %s of policy layer %s; run: wharf policy test <dir>", rule, mod, layer),
		"policy evaluation failed, so the request is refused: %s", msg)
}
