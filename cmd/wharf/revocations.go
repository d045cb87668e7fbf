package main

import (
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/policy"
)

// revocations are the revocations in force for the load pass of `wharf
// list` and the agent runtime: those the policy in force carries (call it
// after a.Policy()), and in a build with the wharf_testhooks tag those of
// testRevocations.
func (a *app) revocations() policy.Revocations { return revocations(a.h) }

func revocations(h *home.Home) policy.Revocations {
	return append(append(policy.Revocations{}, h.Revocations()...), testRevocations()...)
}
