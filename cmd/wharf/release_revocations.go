//go:build !wharf_testhooks

package main

import "github.com/wharfhq/wharf/internal/core/policy"

// testRevocations adds no revocation in a release build: only a pulled
// policy bundle carries them (see testhook_revocations.go).
func testRevocations() policy.Revocations { return nil }
