package main

import (
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/policy"
)

// revocations are the revocations in force for the load pass of `wharf
// list` and the agent runtime: those the policy in force carries (call it
// after h.Policy()), and in a build with the wharf_testhooks tag those of
// testRevocations.
func revocations(h *home.Home) policy.Revocations {
	return append(append(policy.Revocations{}, h.Revocations()...), testRevocations()...)
}
