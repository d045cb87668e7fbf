package resolver

import (
	"sync"

	"github.com/wharfhq/wharf/plugin"
)

// Node is what a Catalog knows about one plugin: the dependencies its
// manifest declares, as parsed by plugin.Dependency (bare "b", "b@mkt" or
// {name, marketplace?, version?}). The resolver never modifies a Node or its
// slice.
type Node struct {
	Dependencies []plugin.Dependency
}

// Catalog is the resolver's read-only view of the marketplaces wharf knows
// and the plugins they list. For plugins that are installed it should answer
// from the installed manifest, so that dependencies are read from what will
// actually run.
//
// The resolver calls a Catalog only during a call to one of its methods and
// never keeps what it returns beyond the result; a Catalog shared by several
// Resolvers used from several goroutines must be safe for concurrent reads.
type Catalog interface {
	// Lookup returns the plugin's node, or false if no known marketplace
	// lists it (and, for an installed plugin, its manifest is unknown).
	Lookup(id plugin.ID) (Node, bool)
	// KnownMarketplace reports whether a marketplace of that name has been
	// added (wharf marketplace add). The resolver never adds one.
	KnownMarketplace(name string) bool
	// AllowsCross reports whether marketplace from lists marketplace to in
	// its allowCrossMarketplaceDependenciesOn.
	AllowsCross(from, to string) bool
}

// CrossPolicy can refuse a cross-marketplace dependency that the marketplaces
// themselves allow; it only ever tightens. It is consulted after the
// marketplace rule passed. A returned error is kept as the cause of the
// *CrossMarketplaceError (a *plugin.Error carrying a Hint lends that hint to
// the result). Implementations must be safe for concurrent use if the
// Resolver is.
type CrossPolicy interface {
	AllowCross(from, to plugin.ID) error
}

// Installed is one entry of the installed registry as the resolver needs it.
type Installed struct {
	ID plugin.ID
	// Auto marks a plugin installed only because something depended on it;
	// Prunable may offer it for removal.
	Auto bool
	// Enabled marks a plugin enabled for this session; DemoteInstalled
	// reads it (Demote takes an enabled set instead).
	Enabled bool
}

// Resolver answers dependency questions over one catalog and one installed
// set. Build it with New for each operation or session (it is cheap: the
// graph of installed plugins is built on first use by Demote,
// ReverseDependents or Prunable, and reused after that). A Resolver is
// immutable after New and safe for concurrent use, provided its Catalog and
// CrossPolicy are.
type Resolver struct {
	cat    Catalog
	policy CrossPolicy
	// flags of each installed plugin, in the order of first appearance in
	// the installed set given to New; its ID is installedID(position). The
	// entries are not copied: on a large set, a copy of pointer-holding
	// structs cost write barriers and garbage-collector scans.
	flags []uint8

	// installed IDs, interned in list order; read-only.
	installed *idTable

	once sync.Once
	g    *graph
}

// New returns a Resolver over cat and the installed set. policy may be nil,
// meaning no restriction beyond allowCrossMarketplaceDependenciesOn. If an ID
// appears twice in installed, the last entry's Auto and Enabled win. New copies
// installed; the caller may reuse the slice.
func New(cat Catalog, installed []Installed, policy CrossPolicy) *Resolver {
	r := &Resolver{
		cat:    cat,
		policy: policy,
		flags:  make([]uint8, 0, len(installed)),
	}
	r.installed = newIDTable(len(installed))
	for _, in := range installed {
		if i, added := r.installed.intern(in.ID); !added {
			r.flags[i] = flagsOf(in)
			continue
		}
		r.flags = append(r.flags, flagsOf(in))
	}
	return r
}

const (
	instAuto    uint8 = 1 << iota // Installed.Auto
	instEnabled                   // Installed.Enabled
)

func flagsOf(in Installed) uint8 {
	var f uint8
	if in.Auto {
		f |= instAuto
	}
	if in.Enabled {
		f |= instEnabled
	}
	return f
}

// installedID returns the ID of the installed plugin at position k.
func (r *Resolver) installedID(k int) plugin.ID {
	return r.installed.ids[k]
}

func (r *Resolver) auto(k int) bool { return r.flags[k]&instAuto != 0 }

// IsInstalled reports whether id is in the installed set given to New.
func (r *Resolver) IsInstalled(id plugin.ID) bool {
	_, ok := r.installed.find(id)
	return ok
}
