package main

import "github.com/wharfhq/wharf/internal/core/policy"

// revocationSource is a policy that carries revocations (the signed policy
// bundle's, once pulled).
type revocationSource interface {
	Revocations() policy.Revocations
}

// testRevocations adds revocations in builds with the wharf_testhooks tag
// (testhook_revocations.go); nil in a release build.
var testRevocations func() policy.Revocations

// revocations are the revocations in force for the load pass of `wharf
// list` and the agent runtime: those the policy in force carries. Call it
// after a.Policy().
func (a *app) revocations() policy.Revocations {
	var out policy.Revocations
	if a.pol != nil {
		if rs, ok := any(a.pol).(revocationSource); ok {
			out = append(out, rs.Revocations()...)
		}
	}
	if testRevocations != nil {
		out = append(out, testRevocations()...)
	}
	return out
}
