package resolver

import (
	"fmt"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// CycleError: the dependencies of a plugin lead back to a plugin on the
// current path. Chain starts and ends with the same plugin
// (a@m → b@m → c@m → a@m); a self-dependency is a chain of two (a@m → a@m).
type CycleError struct {
	Chain []plugin.ID
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + chainString(e.Chain)
}

// Hint says what breaks the cycle.
func (e *CycleError) Hint() string {
	if len(e.Chain) < 2 {
		return "remove the cyclic dependency from the plugin's dependencies"
	}
	last := e.Chain[len(e.Chain)-2]
	if len(e.Chain) == 2 {
		return fmt.Sprintf("ask the maintainer of %s to remove its dependency on itself", last)
	}
	return fmt.Sprintf("ask the maintainers to remove one dependency of the cycle, e.g. %s on %s; wharf cannot install a cycle", last, e.Chain[len(e.Chain)-1])
}

// MissingError: a plugin that is needed is listed by no known marketplace
// (and not installed). For the plugin asked for, RequiredBy is zero and Path
// is empty; otherwise Path runs from the plugin asked for to RequiredBy.
type MissingError struct {
	Dep        plugin.ID
	RequiredBy plugin.ID
	Path       []plugin.ID
	// MarketplaceKnown reports whether Dep's marketplace is known at all.
	MarketplaceKnown bool
}

func (e *MissingError) Error() string {
	if e.RequiredBy.IsZero() {
		if !e.MarketplaceKnown {
			return fmt.Sprintf("%s: marketplace %q is not known", e.Dep, e.Dep.Source)
		}
		return fmt.Sprintf("%s: marketplace %q does not list %q", e.Dep, e.Dep.Source, e.Dep.Name)
	}
	msg := fmt.Sprintf("%s requires %s, which no known marketplace lists", e.RequiredBy, e.Dep)
	if len(e.Path) > 1 {
		msg += " (" + chainString(append(append([]plugin.ID(nil), e.Path...), e.Dep)) + ")"
	}
	return msg
}

// Hint says where the missing plugin could come from.
func (e *MissingError) Hint() string {
	mkt := e.Dep.Source
	if !e.MarketplaceKnown {
		return fmt.Sprintf("run: wharf marketplace add <source of %s>", mkt)
	}
	if e.RequiredBy.IsZero() {
		return fmt.Sprintf("run: wharf marketplace update %s, or wharf search %s to find where it is listed", mkt, e.Dep.Name)
	}
	return fmt.Sprintf("run: wharf marketplace update %s; if %s is still missing, ask the maintainer of %s to fix its dependencies", mkt, e.Dep, e.RequiredBy)
}

// CrossReason says which part of the cross-marketplace rule refused an edge.
type CrossReason int

// The parts of the rule, in the order they are checked.
const (
	// CrossNotAllowed: the dependent's marketplace does not list the target
	// marketplace in allowCrossMarketplaceDependenciesOn.
	CrossNotAllowed CrossReason = iota + 1
	// CrossUnknownMarketplace: the target marketplace is allowed but has not
	// been added; wharf never adds a marketplace on its own.
	CrossUnknownMarketplace
	// CrossPolicyRefused: the CrossPolicy refused the edge.
	CrossPolicyRefused
)

func (r CrossReason) String() string {
	switch r {
	case CrossNotAllowed:
		return "not-allowed"
	case CrossUnknownMarketplace:
		return "unknown-marketplace"
	case CrossPolicyRefused:
		return "policy-refused"
	}
	return fmt.Sprintf("CrossReason(%d)", int(r))
}

// CrossMarketplaceError: From depends on To in another marketplace and the
// cross-marketplace rule refuses it. Trust does not flow through
// dependencies, so this is an error, not a warning.
type CrossMarketplaceError struct {
	From, To plugin.ID
	Reason   CrossReason
	Err      error // the CrossPolicy's error when Reason is CrossPolicyRefused
}

func (e *CrossMarketplaceError) Error() string {
	switch e.Reason {
	case CrossNotAllowed:
		return fmt.Sprintf("%s depends on %s; marketplace %q must list %q in allowCrossMarketplaceDependenciesOn",
			e.From, e.To, e.From.Source, e.To.Source)
	case CrossUnknownMarketplace:
		return fmt.Sprintf("%s depends on %s, but marketplace %q is not known (wharf never adds a marketplace on its own)",
			e.From, e.To, e.To.Source)
	default:
		msg := fmt.Sprintf("%s depends on %s; policy refuses dependencies from marketplace %q on %q", e.From, e.To, e.From.Source, e.To.Source)
		if e.Err != nil {
			msg += ": " + e.Err.Error()
		}
		return msg
	}
}

func (e *CrossMarketplaceError) Unwrap() error { return e.Err }

// Hint names who would have to allow what.
func (e *CrossMarketplaceError) Hint() string {
	switch e.Reason {
	case CrossNotAllowed:
		return fmt.Sprintf("ask the maintainer of marketplace %q to add %q to allowCrossMarketplaceDependenciesOn, or use a plugin from %q instead",
			e.From.Source, e.To.Source, e.From.Source)
	case CrossUnknownMarketplace:
		return fmt.Sprintf("if you trust it, run: wharf marketplace add <source of %s>", e.To.Source)
	default:
		if h := plugin.HintOf(e.Err); h != "" {
			return h
		}
		return fmt.Sprintf("ask an admin to allow dependencies of marketplace %q on %q", e.From.Source, e.To.Source)
	}
}

// hinter is implemented by every error type of this package.
type hinter interface {
	error
	Hint() string
}

// depError wraps one of this package's typed errors into wharf's typed error,
// so that the CLI maps it to exit code 5 and prints the hint.
func depError(object plugin.ID, err hinter) *plugin.Error {
	return &plugin.Error{
		Layer:  plugin.LayerDependency,
		Type:   plugin.TypeDependencyUnsatisfied,
		Object: object.String(),
		Err:    err,
		Hint:   err.Hint(),
	}
}

// Compile-time checks that every typed error carries a hint.
var (
	_ hinter = (*CycleError)(nil)
	_ hinter = (*MissingError)(nil)
	_ hinter = (*CrossMarketplaceError)(nil)
)

func chainString(ids []plugin.ID) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(id.String())
	}
	return b.String()
}
