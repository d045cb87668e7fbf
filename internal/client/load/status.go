package load

import (
	"errors"

	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/plugin"
)

// Status values of a plugin.
const (
	StatusActive   = "active"
	StatusDemoted  = "demoted"
	StatusFailed   = "failed"
	StatusDisabled = "disabled"
)

// ErrorDetail is one typed error of a plugin's status.
type ErrorDetail struct {
	Type    string `json:"type"`
	Layer   string `json:"layer"`
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// Detail describes err: its type, layer and object when it is (or wraps) a
// *plugin.Error, its message and the first hint in its chain.
func Detail(err error) ErrorDetail {
	d := ErrorDetail{Type: "error", Message: err.Error(), Hint: plugin.HintOf(err)}
	var pe *plugin.Error
	if errors.As(err, &pe) {
		d.Type, d.Layer, d.Object = pe.Type, string(pe.Layer), pe.Object
	}
	return d
}

// Row is one installed (or session) plugin's state for a session started
// now: the row of `wharf list` and, with what the agent adds, of `wharf agent
// status`.
type Row struct {
	ID           plugin.ID     `json:"id"`
	Version      string        `json:"version"`
	Scope        string        `json:"scope"`
	Enabled      bool          `json:"enabled"`
	InstallPath  string        `json:"installPath"`
	Auto         bool          `json:"auto,omitempty"`
	Status       string        `json:"status"`
	Forced       string        `json:"forced,omitempty"`
	Delisted     bool          `json:"delisted,omitempty"`
	Errors       []string      `json:"errors"`
	ErrorDetails []ErrorDetail `json:"errorDetails"`
	// Chain explains a demotion: "a@m needs b@m; b@m is disabled".
	Chain  string `json:"chain,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Failed describes each component the plugin declares that cannot be
	// used (kind, name, file, field, reason). The rest of the plugin loads.
	Failed []string `json:"failed,omitempty"`
	// AlwaysOnTokens is the context the plugin adds to every session
	// (plugin.Plugin.AlwaysOnTokens), set by List when its manifest was read.
	AlwaysOnTokens *int `json:"alwaysOnTokens,omitempty"`
}

// NewRow is the empty row of id (errors are [] in JSON, never null).
func NewRow(id plugin.ID) Row {
	return Row{ID: id, Errors: []string{}, ErrorDetails: []ErrorDetail{}}
}

// AddError records err on the row with its type, layer, object and hint.
func (st *Row) AddError(err error) {
	d := Detail(err)
	st.Errors = append(st.Errors, d.Message)
	st.ErrorDetails = append(st.ErrorDetails, d)
}

// Type reports whether the row has an error of type typ.
func (st *Row) Type(typ string) bool {
	for _, d := range st.ErrorDetails {
		if d.Type == typ {
			return true
		}
	}
	return false
}

// OK reports whether the row is enabled and has no error: a plugin that may
// be active unless a dependency demotes it.
func (st *Row) OK() bool { return st.Enabled && len(st.Errors) == 0 }

// Unit is one plugin of a pass: its row, the dependencies its manifest
// declares (nil when it was not read) and, when it passed every check, the
// version dir it is read from.
type Unit struct {
	Row
	Deps []plugin.Dependency
	// Path is the version dir of an installed plugin that passed every
	// check ("" otherwise): what a session leases.
	Path string
	// missing marks a plugin that is enabled but not installed: demotion
	// treats it as absent, so a plugin that needs it says "not installed".
	missing bool
}

// Demote classifies every unit: failed when it has errors, disabled when
// it is not enabled, demoted (with the chain, recorded as a dependency
// error) when a dependency is not active, else active. Demotion is a
// fixed point over reverse dependency edges, computed by the resolver on
// the dependencies the units' manifests declare. Nothing is written: a
// demoted plugin stays enabled.
func Demote(units []*Unit) {
	cat := unitCatalog{}
	inst := make([]resolver.Installed, 0, len(units))
	for _, u := range units {
		if u.missing {
			continue
		}
		cat[u.ID] = resolver.Node{Dependencies: u.Deps}
		inst = append(inst, resolver.Installed{ID: u.ID, Auto: u.Auto, Enabled: u.OK()})
	}
	act := resolver.New(cat, inst, nil).DemoteInstalled()
	failed := map[plugin.ID]string{}
	for _, u := range units {
		if u.Enabled && len(u.ErrorDetails) > 0 && !u.missing {
			failed[u.ID] = u.ErrorDetails[0].Type
		}
	}
	for _, u := range units {
		switch {
		case len(u.Errors) > 0:
			u.Status = StatusFailed
		case !u.Enabled:
			u.Status = StatusDisabled
		case act.Status(u.ID) == resolver.StatusDemoted:
			u.Status = StatusDemoted
			if why, ok := act.Why(u.ID); ok {
				u.Chain = explain(why, failed)
				u.AddError(plugin.Errorf(plugin.LayerDependency, plugin.TypeDependencyUnsatisfied, u.ID.String(),
					"enable or install the missing dependency, then reload", "%s", u.Chain))
			}
		default:
			u.Status = StatusActive
		}
		if u.Status != StatusActive {
			u.Path = ""
		}
	}
}

// explain renders a demotion chain, naming a failed plugin at its end as
// failed rather than disabled (the user enabled it; a check refused it).
func explain(why resolver.Reason, failed map[plugin.ID]string) string {
	s := why.String()
	if len(why.Chain) == 0 {
		return s
	}
	if typ, ok := failed[why.Chain[len(why.Chain)-1]]; ok {
		return s + " (it is enabled but failed: " + typ + ")"
	}
	return s
}

// unitCatalog answers the resolver from the manifests a pass read.
// Demotion does not apply the cross-marketplace rules (install does), so
// the marketplace questions are answered permissively.
type unitCatalog map[plugin.ID]resolver.Node

func (c unitCatalog) Lookup(id plugin.ID) (resolver.Node, bool) { n, ok := c[id]; return n, ok }
func (c unitCatalog) KnownMarketplace(string) bool              { return true }
func (c unitCatalog) AllowsCross(string, string) bool           { return true }
