// Package load decides, for each installed plugin, whether it may be active
// in a session started now and what it contributes: the policy decision
// (with managed enabledPlugins forcing it on or off, and on the source
// the plugin's version was installed from: blockedMarketplaces holds for
// it even though a cached version is never fetched again), the active
// revocations, the trust check (the stat fingerprint on the fast path, a
// full re-hash against the pin on the full path), its manifest and
// dependencies, the per-surface policy of its components, and demotion (a
// worklist over reverse dependency edges, with the chain of why).
//
// Every plugin gets a Row (its status): active, demoted, failed or disabled, with its
// typed errors (type, layer, object, message, hint). `wharf list`, `wharf
// agent status` and the agent runtime all build their rows here, so for one
// failure they say the same thing.
//
// The package reads; it never writes a user's settings. Policy decisions go
// through a Decider to the policy, whose one memo (*policy.Engine's, per
// policy version) answers repeated requests; a policy that keeps that memo
// in a file between processes (policy.WithMemoFile) is asked to read it
// early and to save it after a pass (see Decider.Begin and Decider.Save).
package load
