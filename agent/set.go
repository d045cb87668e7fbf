package agent

import (
	"iter"

	"github.com/wharfhq/wharf/plugin"
)

// Set is the result of one load: the live components, every plugin's status,
// the components that were found but not loaded, and warnings. A Set is
// immutable and safe for concurrent reads; accessors return copies of its
// slices.
type Set struct {
	mode          Mode
	settingsHash  string
	policyVersion string
	// comps point to components nothing changes after the load (the
	// component index's, the parsed trees', the prepared hooks): the
	// accessors copy them out.
	comps    []*Component
	plugins  []PluginStatus
	skipped  []Skipped
	warnings []string
	paths    []string // version dirs of the active installed plugins
	project  FolderTrust
}

// ProjectTrust is the trust decision of the project folder the set was
// loaded for (Trusted with an empty Folder when there is no project).
func (s *Set) ProjectTrust() FolderTrust { return s.project }

// Mode says which loader made the set.
func (s *Set) Mode() Mode { return s.mode }

// SettingsHash is the settings snapshot hash the set was loaded from.
func (s *Set) SettingsHash() string { return s.settingsHash }

// PolicyVersion is the policy version the set was decided under ("" without
// policy).
func (s *Set) PolicyVersion() string { return s.policyVersion }

// Components returns the live components: builtins are not included (the
// agent has them); plugin, user, project and managed components are, ordered
// by kind, then name, then source.
func (s *Set) Components() []Component {
	out := make([]Component, len(s.comps))
	for i, c := range s.comps {
		out[i] = *c
	}
	return out
}

// All yields the live components in the order Components returns them,
// without copying the list: a listing of a large home reads each once.
func (s *Set) All() iter.Seq[Component] {
	return func(yield func(Component) bool) {
		for i := range s.comps {
			if !yield(*s.comps[i]) {
				return
			}
		}
	}
}

// Len is the number of live components.
func (s *Set) Len() int { return len(s.comps) }

// ComponentsOf returns the live components of one kind.
func (s *Set) ComponentsOf(kind plugin.ComponentKind) []Component {
	var out []Component
	for _, c := range s.comps {
		if c.Kind == kind {
			out = append(out, *c)
		}
	}
	return out
}

// Lookup returns the live component of kind registered under name. For hooks,
// which may share a name, it returns the first.
func (s *Set) Lookup(kind plugin.ComponentKind, name string) (Component, bool) {
	for _, c := range s.comps {
		if c.Kind == kind && c.Name == name {
			return *c, true
		}
	}
	return Component{}, false
}

// Plugins returns every plugin's status, installed and session plugins
// alike, in id order.
func (s *Set) Plugins() []PluginStatus {
	out := make([]PluginStatus, len(s.plugins))
	copy(out, s.plugins)
	return out
}

// Plugin returns the status of id.
func (s *Set) Plugin(id plugin.ID) (PluginStatus, bool) {
	for _, p := range s.plugins {
		if p.ID == id {
			return p, true
		}
	}
	return PluginStatus{}, false
}

// Skipped returns the components that were found but not loaded: locked
// surfaces, hooks policy refuses, collisions with builtins and shadowed user
// components.
func (s *Set) Skipped() []Skipped { return append([]Skipped(nil), s.skipped...) }

// Warnings returns problems that did not stop anything from loading.
func (s *Set) Warnings() []string { return append([]string(nil), s.warnings...) }
