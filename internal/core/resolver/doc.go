// Package resolver computes what wharf's apt-style dependencies mean for a set
// of plugins, without any I/O:
//
//   - Closure: the install plan for one plugin, dependencies first (DFS
//     post-order), with cycles reported by their chain, missing dependencies
//     reported with who required them, and cross-marketplace dependencies
//     refused unless the dependent's marketplace allows the target
//     marketplace and the target marketplace is already known;
//   - Demote: the fixed point of "a plugin is active only if it is enabled
//     and all its dependencies are active", computed with a worklist over
//     reverse edges (linear in plugins + edges), with the chain of why for
//     every demoted plugin; DemoteInstalled is the same with the enabled
//     flag carried by each installed entry instead of a map;
//   - ReverseDependents: who would lose a dependency if a plugin went away;
//   - Prunable: plugins installed only as dependencies (auto) that no manually
//     installed plugin needs any more.
//
// Dependencies have presence semantics: "A depends on B" means B must be
// installed and enabled while A runs. Version ranges in dependency entries are
// ignored on purpose; Closure says so once per plan, in Plan.Warnings.
//
// The package reads the world only through the small Catalog interface and
// an optional CrossPolicy, both supplied by the caller (install, agent, api),
// so every result is a pure function of those inputs. Nothing is written:
// demotion in particular is computed per session and never stored back into
// anyone's settings.
//
// Every dependency failure is a *plugin.Error with Layer
// plugin.LayerDependency and Type plugin.TypeDependencyUnsatisfied wrapping
// one of *CycleError, *MissingError or *CrossMarketplaceError, so the CLI
// exits 5 and callers can errors.As to the detail they branch on; each typed
// error has a Hint with the next action, copied into the *plugin.Error. The
// one exception is asking for a plugin that nothing lists: that is the
// user's request failing, not a dependency, so it is Layer intent, Type
// not-found, still wrapping a *MissingError.
//
// A Resolver is built per operation or per session with New, is immutable
// afterwards and is safe for concurrent use when its Catalog and CrossPolicy
// are.
//
// Performance: every walk runs over int32 numbers in compressed rows, never
// over maps of IDs. The numbering is built during the call, which hashes one
// plugin ID per dependency edge; at the size of the largest real marketplace
// a plan or a demotion costs well under a millisecond (see
// docs/performance.md). Installed entries are not copied (only their flags
// are), and DemoteInstalled reads no map of the caller's.
package resolver
