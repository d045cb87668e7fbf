// Package agentlink gives wharf's own commands what agent.Open takes
// beyond its public Options: values whose types are internal to wharf (the
// home's policy engine, with its server layers and memo file; the
// registry and cache the command already holds open; the revocations of
// the signed policy bundle; the known marketplaces' sources). An embedder
// outside wharf cannot import it: agent.Open reads all of that from the
// home itself.
//
// Package agent fills in this package's functions when it is initialized;
// a program that imports agentlink imports agent too, to have an
// agent.Options to wire.
package agentlink

import (
	"context"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// Registry is the installed registry (*cache.Cache).
type Registry interface {
	List() ([]cache.Record, error)
}

// Leaser leases version directories for the session (*cache.Cache).
type Leaser interface {
	Acquire(ctx context.Context, paths ...string) (*cache.Lease, error)
}

// Wiring is what a command gives a Runtime in place of what Open would read
// from the home. A nil Registry leaves the home's to Open.
type Wiring struct {
	Registry Registry
	// Leaser, when set, leases the version dirs of the current set.
	Leaser Leaser
	// Revocations are those the signed policy bundle carries.
	Revocations policy.Revocations
	// MarketplaceSource returns a known marketplace's source, or nil.
	MarketplaceSource func(name string) *plugin.MarketplaceSource
}

var (
	policyOf func(*policy.Engine) any
	wire     func(options any, w Wiring)
)

// Register is called by package agent: policy wraps an engine as an
// *agent.Policy, w stores a Wiring in an *agent.Options.
func Register(policy func(*policy.Engine) any, w func(options any, wiring Wiring)) {
	policyOf, wire = policy, w
}

// Policy returns e as an *agent.Policy (as any: this package cannot
// import agent). The Runtime asks e as it is, under the machine's managed
// layers, and reloads it at every Runtime.Load after the first.
func Policy(e *policy.Engine) any { return policyOf(e) }

// Wire stores w in options, an *agent.Options.
func Wire(options any, w Wiring) { wire(options, w) }
